// An MCP Apps host page in miniature, built on the official host bridge (`AppBridge` of
// @modelcontextprotocol/ext-apps 2.0.4) and the official TypeScript client
// (@modelcontextprotocol/client), bundled by tests/console/apps.mjs with esbuild. It
// connects to the MCP endpoint named by `?mcp=` (a same-origin path the runner proxies to
// Manifold), finds the tool named by `?tool=`, reads the UI resource its
// `_meta.ui.resourceUri` names, renders it in a sandboxed iframe, and bridges the app's
// requests (its tool calls among them) to that endpoint, as a host such as Claude does.
//
// It reports on the page: `window.hostState` ("ready" once the app initialized, or
// "error: …"), `window.hostLog` (what happened, in order), and `window.uiUri`.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const log = (line) => {
    window.hostLog.push(line);
    console.log(`[host] ${line}`);
};
window.hostLog = [];
window.hostState = 'starting';

async function main() {
    const params = new URLSearchParams(location.search);
    const endpoint = new URL(params.get('mcp'), location.origin);
    const toolName = params.get('tool');
    const client = new Client({ name: 'manifold-apps-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(endpoint));
    log(`connected to ${endpoint.pathname}`);
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === toolName);
    if (!tool) throw new Error(`no tool ${toolName} in ${tools.map((t) => t.name).join(', ')}`);
    const uri = tool._meta?.ui?.resourceUri;
    window.uiUri = uri;
    const read = await client.readResource({ uri });
    const html = read.contents[0].text;
    log(`read ${uri} (${html.length} characters)`);

    const iframe = document.createElement('iframe');
    iframe.id = 'app';
    iframe.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms');
    iframe.style.width = '800px';
    iframe.style.height = '600px';
    document.body.appendChild(iframe);
    const bridge = new AppBridge(
        client,
        { name: 'manifold-apps-host', version: '1.0.0' },
        { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} },
    );
    bridge.oninitialized = async () => {
        log('app initialized');
        await bridge.sendToolInput({ arguments: {} });
        const result = await client.callTool({ name: toolName, arguments: {} });
        await bridge.sendToolResult(result);
        log(`first result sent: ${JSON.stringify(result.content?.[0] ?? null)}`);
        window.hostState = 'ready';
    };
    // The transport listens before the app's first message can arrive (the iframe's
    // window stays the same object when its document is replaced).
    await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
    log('bridge connected');
    iframe.srcdoc = html;
}

main().catch((e) => {
    window.hostState = `error: ${e && e.stack ? e.stack : e}`;
    console.error(window.hostState);
});
