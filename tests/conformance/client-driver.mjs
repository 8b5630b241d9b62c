// Client driver for the conformance suite's *client* scenarios, run through Manifold.
//
// The suite (`conformance client --command "<node> client-driver.mjs" --scenario X`) starts a
// mock MCP server for scenario X and runs this file with the mock's URL as the last argument
// and MCP_CONFORMANCE_SCENARIO=X in the environment. This driver then
//   1. writes a gateway.toml whose only upstream is that URL (prefix_mode = "never"); for
//      auth/*, runs `manifold login` and writes the issuer it printed as `auth.issuer`,
//   2. starts `$MANIFOLD_BIN serve --config <it>` and waits for its "listening" line,
//   3. acts as an MCP client *through Manifold* (SDK Client + StreamableHTTPClientTransport
//      against Manifold's URL) doing what scenario X expects of a client,
//   4. stops Manifold (SIGTERM, then SIGKILL after 5 s).
// So the "client under test" is Manifold's upstream side: initialize, tools/call routing, and
// the relay of server->client requests (elicitation) and SSE resumption.
//
// Environment:
//   MANIFOLD_BIN            gateway binary (default <repo>/target/debug/manifold)
//   MANIFOLD_NODE_MODULES   where @modelcontextprotocol/sdk is installed (scripts/peers)
//   MANIFOLD_CONFORMANCE_PIDDIR  optional: files named <pid> are created there for this
//                           driver and for the Manifold it starts (removed when they stop),
//                           so tests/conformance/run can kill leftovers on exit
//   MANIFOLD_CONFORMANCE_DEADLINE_MS  hard deadline for the whole driver (default 25000;
//                           the suite's own --timeout is 30000)
// Manifold's stderr (its logs) is copied to this process's stderr, which the suite saves as
// stderr.txt next to the scenario's checks.json. Exit status: 0 when the scenario's client
// steps all succeeded, 1 otherwise.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const log = (...a) => console.error('[client-driver]', ...a);

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
if (!url || !/^https?:\/\//.test(url)) {
    console.error('usage: client-driver.mjs <mock server url>   (MCP_CONFORMANCE_SCENARIO=<scenario>)');
    process.exit(2);
}
const NM = process.env.MANIFOLD_NODE_MODULES;
if (!NM) {
    console.error('client-driver: MANIFOLD_NODE_MODULES is not set (. .peers/env.sh)');
    process.exit(2);
}
const sdk = (sub) => import(pathToFileURL(path.join(NM, '@modelcontextprotocol', 'sdk', 'dist', 'esm', sub)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { ElicitRequestSchema, CreateMessageRequestSchema } = await sdk('types.js');

const BIN = process.env.MANIFOLD_BIN ? path.resolve(REPO, process.env.MANIFOLD_BIN) : path.join(REPO, 'target/debug/manifold');
const DEADLINE_MS = Number(process.env.MANIFOLD_CONFORMANCE_DEADLINE_MS ?? 25000);
const REQUEST_TIMEOUT_MS = 15000;

// The suite's mocks answer on http://localhost:<port>; they are bound to 127.0.0.1 (the run
// script preloads tests/interop/ts/bind-localhost.mjs), so hand Manifold the IPv4 literal.
// Except for auth/*: the mock's protected resource metadata names its `localhost` URL as the
// resource, and Manifold refuses to ask for a token for a resource that is not its upstream.
const AUTH = scenario.startsWith('auth/');
const upstreamUrl = AUTH ? url : url.replace(/^(https?:\/\/)localhost(?=[:/]|$)/, '$1127.0.0.1');
// auth/basic-cimd: the Client ID Metadata Document URL the scenario expects as client_id.
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';

// What each scenario expects the client to do after initialize: call a tool (original name).
//   callAll     call every tool Manifold lists (with {} or, with fillArgs, the required
//               arguments filled in from the tool's inputSchema)
//   fromContext call the tools/arguments the suite passes in MCP_CONFORMANCE_CONTEXT.toolCalls
//   resources / prompts   also list resources and read each, list prompts and get each
const PLAN = {
    initialize: { listOnly: true },
    tools_call: { tool: 'add_numbers', args: { a: 5, b: 3 } },
    'elicitation-sep1034-client-defaults': { tool: 'test_client_elicitation_defaults', args: {} },
    'sse-retry': { tool: 'test_reconnection', args: {} },
    // 0.2.0 alpha, 2026-07-28 (tests/conformance/run client-2026)
    'http-standard-headers': { callAll: true, fillArgs: true, resources: true, prompts: true },
    'http-custom-headers': { fromContext: true },
    'http-invalid-tool-headers': { callAll: true, fillArgs: true }, // Manifold must not list the invalid ones
};
const plan = PLAN[scenario] ?? { callAll: true }; // unknown (e.g. auth/*): call whatever is listed
let context = {};
try {
    context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
} catch {
    log('MCP_CONFORMANCE_CONTEXT is not JSON; ignored');
}
// Required arguments from a JSON Schema: a placeholder of the property's type.
function fillArgs(schema) {
    const args = {};
    for (const name of schema?.required ?? []) {
        const type = schema.properties?.[name]?.type;
        args[name] =
            type === 'integer' || type === 'number'
                ? 1
                : type === 'boolean'
                  ? true
                  : type === 'object'
                    ? {}
                    : type === 'array'
                      ? []
                      : type === 'null'
                        ? null
                        : 'test-value';
    }
    return args;
}

// ------------------------------------------------------------------ Manifold
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'manifold-conformance-client-'));
const configPath = path.join(tmp, 'gateway.toml');
// auth/*: the issuer `manifold login` printed, written into the configuration as
// `auth.issuer` before `serve` starts (see pinIssuer).
let pinnedIssuer = null;
const writeConfig = () => fs.writeFileSync(
    configPath,
    [
        '[server]',
        'listen = "127.0.0.1:0"',
        '',
        '[naming]',
        'prefix_mode = "never"',
        '',
        '[upstreams.conformance]',
        `url = ${JSON.stringify(upstreamUrl)}`,
        '',
        ...(AUTH
            ? [
                  // Manifold as the OAuth client: `manifold login` runs the flow (the driver plays
                  // the browser), `serve` uses, refreshes and reloads the stored tokens.
                  '[upstreams.conformance.auth]',
                  'type = "oauth"',
                  ...(context.client_id
                      ? [`client_id = ${JSON.stringify(context.client_id)}`]
                      : scenario === 'auth/basic-cimd'
                        ? [`client_id = ${JSON.stringify(CIMD_URL)}`]
                        : []),
                  ...(context.client_secret ? [`client_secret = ${JSON.stringify(context.client_secret)}`] : []),
                  ...(pinnedIssuer ? [`issuer = ${JSON.stringify(pinnedIssuer)}`] : []),
                  '',
                  '[credentials]',
                  `store = ${JSON.stringify(path.join(tmp, 'tokens'))}`,
                  'key = "conformance-driver-token-store-key-0123456789"',
                  '',
              ]
            : []),
    ].join('\n'),
);
writeConfig();

// After the first login, the issuer it used is pinned, as an operator would: `serve` then
// reaches the suite's authorization server (on another loopback origin than the mock, so
// not reachable by `serve` unless the configuration names it) to refresh, and uses the stored
// tokens only with that issuer. Not for the scenario whose upstream moves to another
// authorization server: a pinned issuer refuses the move until the operator changes it.
const PIN = AUTH && scenario !== 'auth/authorization-server-migration';
function pinIssuer(issuer) {
    if (!PIN || pinnedIssuer || !issuer) return;
    pinnedIssuer = issuer;
    writeConfig();
    log(`pinned auth.issuer = ${issuer}`);
}

// `manifold login conformance` with this driver as the browser: it reads the authorization URL
// the command prints, follows it (the suite's authorization server approves at once and
// redirects to the command's loopback callback) and waits for the command to store the tokens.
// At most MAX_LOGINS per scenario (a gateway that kept asking would loop).
const MAX_LOGINS = 3;
let logins = 0;
async function login() {
    logins += 1;
    log(`manifold login conformance (${logins}/${MAX_LOGINS})`);
    const child = spawn(BIN, ['login', 'conformance', '--config', configPath, '--no-browser'], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info' },
    });
    child.stderr.on('data', (d) => process.stderr.write(d));
    const exited = new Promise((r) => child.once('exit', (code) => r(code)));
    let out = '';
    let followed = false;
    child.stdout.on('data', async (d) => {
        out += d.toString();
        const m = /^open: (\S+)$/m.exec(out);
        if (m && !followed) {
            followed = true;
            try {
                const res = await fetch(m[1], { redirect: 'follow' });
                log(`authorization URL followed: HTTP ${res.status} at ${res.url.split('?')[0]}`);
            } catch (e) {
                log(`following the authorization URL failed: ${e?.message ?? e}`);
            }
        }
    });
    const code = await exited;
    log(`manifold login exited ${code}: ${out.trim().split('\n').pop()}`);
    if (code === 0) pinIssuer(/^issuer: (\S+)/m.exec(out)?.[1]);
    return code === 0;
}

let gateway = null;
let pidFile = null;
async function stopGateway() {
    const child = gateway;
    gateway = null;
    if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
    }
    if (pidFile) fs.rmSync(pidFile, { force: true });
    fs.rmSync(tmp, { recursive: true, force: true });
}

function startGateway() {
    return new Promise((resolve, reject) => {
        log(`starting ${BIN} serve --config ${configPath} (upstream ${upstreamUrl})`);
        const child = spawn(BIN, ['serve', '--config', configPath, '--log-format', 'json'], {
            stdio: ['ignore', 'pipe', 'pipe'],
            env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'info' },
        });
        gateway = child;
        if (process.env.MANIFOLD_CONFORMANCE_PIDDIR && child.pid) {
            pidFile = path.join(process.env.MANIFOLD_CONFORMANCE_PIDDIR, String(child.pid));
            fs.writeFileSync(pidFile, `${child.pid}\n`);
        }
        child.stderr.on('data', (d) => process.stderr.write(d));
        let buf = '';
        const timer = setTimeout(() => reject(new Error('Manifold did not print its listening line within 15 s')), 15000);
        child.stdout.on('data', (d) => {
            buf += d.toString();
            const m = /Manifold listening on (\S+)(.*)/.exec(buf);
            if (m) {
                clearTimeout(timer);
                log(`gateway: ${m[0].trim()}`);
                resolve(m[1]);
            }
        });
        child.once('exit', (code, sig) => {
            clearTimeout(timer);
            reject(new Error(`Manifold exited early (code ${code}, signal ${sig})`));
        });
        child.once('error', (e) => {
            clearTimeout(timer);
            reject(e);
        });
    });
}

// ------------------------------------------------------------------ the client
async function runClient(gatewayUrl) {
    const client = new Client(
        { name: 'manifold-conformance-client-driver', version: '1.0.0' },
        { capabilities: { sampling: {}, elicitation: { form: { applyDefaults: true } } } },
    );
    // Accept every elicitation with no content of our own: the SDK fills in the schema's
    // defaults (applyDefaults), which is what the SEP-1034 client scenario checks.
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
        log(`elicitation/create relayed by Manifold: ${JSON.stringify(req.params).slice(0, 300)}`);
        return { action: 'accept', content: {} };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
        role: 'assistant',
        content: { type: 'text', text: 'sampled by the conformance client driver' },
        model: 'conformance-driver',
        stopReason: 'endTurn',
    }));
    const transport = new StreamableHTTPClientTransport(new URL(gatewayUrl));
    await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
    let ok = true;
    try {
        const tools = [];
        let cursor;
        do {
            const page = await client.listTools(cursor ? { cursor } : {}, { timeout: REQUEST_TIMEOUT_MS });
            tools.push(...page.tools);
            cursor = page.nextCursor;
        } while (cursor);
        // auth/*: an upstream Manifold reports as needs_login (e.g. after its authorization
        // server changed) lists nothing; log in again, as an operator would, and wait for
        // Manifold to reconnect with the new token.
        if (AUTH && tools.length === 0 && logins < MAX_LOGINS && (await login())) {
            const until = Date.now() + 10000;
            while (tools.length === 0 && Date.now() < until) {
                await new Promise((r) => setTimeout(r, 250));
                const page = await client.listTools({}, { timeout: REQUEST_TIMEOUT_MS });
                tools.push(...page.tools);
            }
        }
        log(`tools via Manifold: ${tools.map((t) => t.name).join(', ') || '(none)'}`);
        const calls = plan.listOnly
            ? []
            : plan.callAll
              ? tools.map((t) => ({ tool: t.name, args: plan.fillArgs ? fillArgs(t.inputSchema) : {} }))
              : plan.fromContext
                ? (context.toolCalls ?? []).map((c) => ({ tool: c.name, args: c.arguments ?? {} }))
                : [{ tool: plan.tool, args: plan.args }];
        for (const { tool, args } of calls) {
            if (!plan.callAll && !tools.some((t) => t.name === tool)) {
                log(`tool ${tool} is not listed by Manifold`);
                ok = false;
                continue;
            }
            try {
                let res = await client.callTool({ name: tool, arguments: args }, undefined, {
                    timeout: REQUEST_TIMEOUT_MS,
                });
                // A step-up: Manifold says which login grants the missing scope.
                while (AUTH && res.isError && logins < MAX_LOGINS && /manifold login/.test(JSON.stringify(res))) {
                    log(`tools/call ${tool} needs a login: ${JSON.stringify(res).slice(0, 300)}`);
                    if (!(await login())) break;
                    res = await client.callTool({ name: tool, arguments: args }, undefined, {
                        timeout: REQUEST_TIMEOUT_MS,
                    });
                }
                log(`tools/call ${tool} -> ${JSON.stringify(res).slice(0, 300)}`);
                if (res.isError) ok = false;
            } catch (e) {
                log(`tools/call ${tool} failed: ${e?.message ?? e}`);
                ok = false;
            }
        }
        // Resources and prompts only where the scenario looks at them, and only when listed.
        const caps = client.getServerCapabilities() ?? {};
        if (plan.resources && caps.resources) {
            try {
                const { resources } = await client.listResources({}, { timeout: REQUEST_TIMEOUT_MS });
                for (const r of resources) {
                    const res = await client.readResource({ uri: r.uri }, { timeout: REQUEST_TIMEOUT_MS });
                    log(`resources/read ${r.uri} -> ${JSON.stringify(res).slice(0, 200)}`);
                }
            } catch (e) {
                log(`resources failed: ${e?.message ?? e}`);
                ok = false;
            }
        }
        if (plan.prompts && caps.prompts) {
            try {
                const { prompts } = await client.listPrompts({}, { timeout: REQUEST_TIMEOUT_MS });
                for (const p of prompts) {
                    const res = await client.getPrompt({ name: p.name }, { timeout: REQUEST_TIMEOUT_MS });
                    log(`prompts/get ${p.name} -> ${JSON.stringify(res).slice(0, 200)}`);
                }
            } catch (e) {
                log(`prompts failed: ${e?.message ?? e}`);
                ok = false;
            }
        }
    } finally {
        await client.close().catch(() => {});
    }
    return ok;
}

// ------------------------------------------------------------------ main
const selfPidFile = process.env.MANIFOLD_CONFORMANCE_PIDDIR
    ? path.join(process.env.MANIFOLD_CONFORMANCE_PIDDIR, String(process.pid))
    : null;
if (selfPidFile) fs.writeFileSync(selfPidFile, `${process.pid}\n`);
process.on('exit', () => {
    if (selfPidFile) fs.rmSync(selfPidFile, { force: true });
});
let exitCode = 1;
const deadline = setTimeout(async () => {
    log(`deadline of ${DEADLINE_MS} ms reached; stopping`);
    await stopGateway();
    process.exit(1);
}, DEADLINE_MS);
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.on(sig, async () => {
        await stopGateway();
        process.exit(1);
    });
}
try {
    if (AUTH && !(await login())) log('the first login failed; starting Manifold anyway');
    const gatewayUrl = await startGateway();
    exitCode = (await runClient(gatewayUrl)) ? 0 : 1;
} catch (e) {
    log(`error: ${e?.stack ?? e}`);
    exitCode = 1;
} finally {
    await stopGateway();
    clearTimeout(deadline);
}
process.exit(exitCode);
