// MCP Apps rendered through Manifold in a real browser: Debian's chromium, headless, driven
// by playwright-core; the host page (tests/console/apps-host.mjs: the official `AppBridge`
// of @modelcontextprotocol/ext-apps and the official TypeScript client) bundled with
// esbuild. Run by tests/e2e/tests/apps_browser.rs against a running `manifold serve` in
// front of the official example servers server-basic-vanillajs and server-basic-react,
// each also on its own `[[endpoint]]` with `naming = "original"`.
//
// For each app (APPS: `name=/endpoint/path:tool`, comma-separated): the host page reads
// the tool's UI resource through that endpoint, renders it, and the app initializes; then
// the app's own "Get Server Time" button is clicked inside the iframe, the app calls its
// server's tool by its own name through the bridge, and the time it shows changes. The
// runner prints the UI URI each host rendered and the calls the proxy saw, so the Rust side
// can check them against Manifold's audit log.
//
// Environment: MCP_ORIGIN (http://127.0.0.1:PORT of Manifold's MCP listener), APPS,
// CHROMIUM, CONSOLE_NODE_MODULES (playwright-core, esbuild), JS_NODE_MODULES (ext-apps,
// @modelcontextprotocol/client). Prints one line per step (`ok …` / `FAIL …`) and one
// `result {json}` line; exits 0 when every step passed.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const env = (k) => {
    const v = process.env[k];
    if (!v) {
        console.error(`apps.mjs: ${k} is not set`);
        process.exit(2);
    }
    return v;
};
const MCP_ORIGIN = env('MCP_ORIGIN');
const APPS = env('APPS')
    .split(',')
    .map((a) => {
        const [name, rest] = a.split('=');
        const [endpoint, tool] = rest.split(':');
        return { name, endpoint, tool };
    });
const CHROMIUM = env('CHROMIUM');
const NM = env('CONSOLE_NODE_MODULES');
const JS_NM = env('JS_NODE_MODULES');
const STEP_TIMEOUT = 20000;
const here = path.dirname(fileURLToPath(import.meta.url));

const { chromium } = await import(pathToFileURL(path.join(NM, 'playwright-core', 'index.mjs')).href);
const esbuild = await import(pathToFileURL(path.join(NM, 'esbuild', 'lib', 'main.js')).href);

let failed = false;
async function step(name, fn) {
    if (failed) return;
    const t = Date.now();
    try {
        await fn();
        console.log(`ok   ${name} (${Date.now() - t} ms)`);
    } catch (e) {
        failed = true;
        console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
    }
}
function check(cond, what) {
    if (!cond) throw new Error(what);
}

// The host page's script, bundled for the browser from the pinned packages.
let bundle = '';
await step('bundle the host page (esbuild)', async () => {
    const out = await esbuild.build({
        entryPoints: [path.join(here, 'apps-host.mjs')],
        bundle: true,
        format: 'esm',
        platform: 'browser',
        write: false,
        nodePaths: [JS_NM],
        logLevel: 'silent',
    });
    bundle = out.outputFiles[0].text;
    check(bundle.length > 1000, 'an empty bundle');
});

// The page and its script, and /mcp/* proxied to Manifold (one origin: no CORS).
const calls = [];
const server = http.createServer((req, res) => {
    if (req.url.startsWith('/mcp')) {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => {
            const body = Buffer.concat(chunks);
            try {
                const msg = JSON.parse(body.toString() || 'null');
                if (msg && msg.method === 'tools/call') calls.push({ endpoint: req.url, name: msg.params?.name });
            } catch {}
            const headers = { ...req.headers };
            delete headers.host;
            const up = http.request(new URL(req.url, MCP_ORIGIN), { method: req.method, headers }, (r) => {
                res.writeHead(r.statusCode, r.headers);
                r.pipe(res);
            });
            up.on('error', (e) => {
                res.writeHead(502);
                res.end(String(e));
            });
            up.end(body);
        });
        return;
    }
    if (req.url.startsWith('/host.js')) {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end(bundle);
        return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><html><head><title>apps host</title></head><body><script type="module" src="/host.js"></script></body></html>');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${server.address().port}`;

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'manifold-apps-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
    ],
});
const result = { rendered: {}, shown: {} };
const isoTime = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/;
for (const app of APPS) {
    const page = await context.newPage();
    page.on('console', (m) => {
        if (m.type() === 'error') console.error(`[${app.name} console] ${m.text()}`);
    });
    await step(`${app.name}: the host renders the app's UI through ${app.endpoint}`, async () => {
        await page.goto(`${origin}/?mcp=${encodeURIComponent(app.endpoint)}&tool=${encodeURIComponent(app.tool)}`);
        await page.waitForFunction(() => window.hostState !== 'starting', null, { timeout: STEP_TIMEOUT });
        const state = await page.evaluate(() => window.hostState);
        check(state === 'ready', `host: ${state}; log: ${JSON.stringify(await page.evaluate(() => window.hostLog))}`);
        result.rendered[app.name] = await page.evaluate(() => window.uiUri);
    });
    await step(`${app.name}: the app's own button calls its server's tool by its own name`, async () => {
        const frame = page.frameLocator('#app');
        const before = calls.length;
        await frame.getByRole('button', { name: 'Get Server Time' }).click({ timeout: STEP_TIMEOUT });
        const deadline = Date.now() + STEP_TIMEOUT;
        while (calls.length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        const made = calls.slice(before);
        check(made.length > 0, 'the click made no tools/call');
        check(
            made.every((c) => c.name === app.tool && c.endpoint.startsWith(app.endpoint)),
            `calls: ${JSON.stringify(made)}`,
        );
        // The app shows what its server answered.
        const text = await frame.locator('body').innerText({ timeout: STEP_TIMEOUT });
        check(isoTime.test(text), `the app shows no time: ${text.slice(0, 400)}`);
        result.shown[app.name] = text.match(isoTime)[0];
    });
    await page.close();
}
result.calls = calls;
console.log(`result ${JSON.stringify(result)}`);
await context.close();
server.close();
fs.rmSync(profile, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
