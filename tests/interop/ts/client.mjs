// Manifold interop driver: the official TypeScript MCP SDK client over Streamable HTTP (or stdio).
//
// Usage:
//   "$MANIFOLD_NODE" tests/interop/ts/client.mjs <url> '<plan json>'
//   <url> may be `stdio:["command","arg",...]`: the server is launched and spoken to over stdio.
//   plan: {"steps":[{"op":"list_tools"},{"op":"call_tool","name":"echo","arguments":{...}},
//                   {"op":"call_tool_with_progress","name":"...","arguments":{...}},{"op":"ping"}],
//          "timeoutMs": 60000}                     (timeoutMs: optional per-request timeout)
//   More ops (same semantics in py/client.py; see tests/interop/README.md):
//     {"op":"list_prompts"} | {"op":"list_resources"} | {"op":"list_resource_templates"}
//         every page; the result is the concatenated prompts / resources / resourceTemplates
//     {"op":"get_prompt","name":..,"arguments":{..}?}      -> the raw prompts/get result
//     {"op":"read_resource","uri":..}                      -> the raw resources/read result
//     {"op":"subscribe_resource","uri":..} | {"op":"unsubscribe_resource","uri":..}  -> {} (raw)
//     {"op":"complete","ref":{"type":"ref/prompt","name":..}|{"type":"ref/resource","uri":..},
//      "argument":{"name":..,"value":..},"context":{"arguments":{..}}?}
//         -> the raw completion/complete result
//     {"op":"set_logging_level","level":..}                -> {} (raw)
//   plan.connect: {"secret": <key>?} declares elicitation (form and url) and opens every URL-mode
//     connect link (a Manifold `user_oauth`/`user_secret` upstream) as a person would; then accepts.
//     {"op":"call_tool_connecting","name":..,"arguments":{..}}  on -32042: opens each link, waits
//         for its notifications/elicitation/complete, calls again ->
//         {"result", "elicitations": [..], "completed": [elicitationId..]}
//   plan.elicitation: "accept" | "decline" | "cancel" declares form elicitation and answers every
//     elicitation/create with that action; the output then has "elicited": [params...].
//     {"op":"wait_notifications","method":..,"since":<step index, default 0>,"count":<default 1>,
//      "timeoutMs":<default 10000>}
//         waits until `count` notifications with that method have been received (POST response
//         streams and the GET stream alike) since step `since` started, or until timeoutMs;
//         never fails: the result is the list of their `params` ({} when absent), possibly
//         shorter than `count` (so count:1 with a short timeoutMs checks that none arrives).
//         On stderr it logs "step <i>: waiting for <count> <method>" as it starts waiting.
//
// Prints ONE JSON object on stdout:
//   {"protocolVersion", "serverInfo", "capabilities", "instructions", "negotiation":"initialize",
//    "results":[...], "errors":[...]}
// results[i] is the raw JSON-RPC `result` of step i as received on the wire (list_tools and the
// other list ops: the concatenated items of all pages; call_tool_with_progress: {"result",
// "progress":[params...]}; ping: {}; wait_notifications: [params...]), or
// {"error":{"message","code","httpStatus"?}} when the step failed (the run goes on).
// errors[] repeats the failures as {"step","op","message","code"}; a failed connect is reported
// as {"step":null,"op":"connect",...}. Logs go to stderr.
// Exit status: 0 when connected and the plan ran (even with failed steps), 1 when the client
// could not connect/initialize, 2 on bad usage.
//
// Module resolution: ESM ignores NODE_PATH, so the SDK is loaded with dynamic import() of an
// absolute file URL computed from $MANIFOLD_NODE_MODULES (set by scripts/peers), i.e.
// $MANIFOLD_NODE_MODULES/@modelcontextprotocol/sdk/dist/esm/<subpath> (the package's "./*"
// export target for `import`). Nothing is copied; this file runs from the repo.
//
// Wire log: every JSON-RPC message RECEIVED from the server is appended, as parsed JSON, one
// per line, to the file named by $MANIFOLD_WIRE_LOG (truncated at start). The recording wraps
// the `fetch` handed to StreamableHTTPClientTransport: application/json bodies are read, logged
// and re-wrapped in a new Response; text/event-stream bodies are piped through a pass-through
// TransformStream that parses the SSE events it forwards. So the log holds exactly the bytes
// the server sent (before the SDK's zod parsing), in arrival order, on POST responses and on
// the GET stream alike; JSON-RPC batches are split into one line per message. SSE events with
// empty data (priming events) are skipped.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const log = (...a) => console.error('[ts-client]', ...a);
function usage(msg) {
    console.error(`ts-client: ${msg}\nusage: client.mjs <url> '<plan json>'`);
    process.exit(2);
}

const [url, planText] = process.argv.slice(2);
if (!url || !planText) usage('missing arguments');
let plan;
try {
    plan = JSON.parse(planText);
} catch (e) {
    usage(`plan is not JSON: ${e.message}`);
}
if (!plan || !Array.isArray(plan.steps)) usage('plan must be {"steps":[...]}');

const NM = process.env.MANIFOLD_NODE_MODULES;
if (!NM) usage('MANIFOLD_NODE_MODULES is not set (run scripts/peers, then . .peers/env.sh)');
const sdkFile = (sub) => path.join(NM, '@modelcontextprotocol', 'sdk', 'dist', 'esm', sub);
if (!fs.existsSync(sdkFile('client/index.js'))) usage(`@modelcontextprotocol/sdk not found under ${NM}`);
const sdk = (sub) => import(pathToFileURL(sdkFile(sub)).href);

const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport, StreamableHTTPError } = await sdk('client/streamableHttp.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { CreateMessageRequestSchema, ElicitRequestSchema, McpError } = await sdk('types.js');

// ---------------------------------------------------------------- wire recording
const received = []; // every message received, in order
const sentById = new Map(); // JSON-RPC id -> outgoing request {method, params, seq}
let sentSeq = 0;
const wireFd = process.env.MANIFOLD_WIRE_LOG ? fs.openSync(process.env.MANIFOLD_WIRE_LOG, 'w') : null;

function recordReceived(value) {
    for (const m of Array.isArray(value) ? value : [value]) {
        received.push(m);
        if (wireFd !== null) fs.writeSync(wireFd, JSON.stringify(m) + '\n');
    }
}
function recordSent(body) {
    let v;
    try {
        v = JSON.parse(body);
    } catch {
        return;
    }
    for (const m of Array.isArray(v) ? v : [v]) {
        if (m && typeof m === 'object' && typeof m.method === 'string' && m.id !== undefined && m.id !== null) {
            sentById.set(JSON.stringify(m.id), { method: m.method, params: m.params, seq: sentSeq++ });
        }
    }
}
function parseAndRecord(text, where) {
    if (!text || !text.trim()) return;
    try {
        recordReceived(JSON.parse(text));
    } catch (e) {
        log(`WARNING: non-JSON ${where} body not recorded: ${JSON.stringify(text.slice(0, 200))}`);
    }
}

// Pass-through TransformStream that parses the SSE events flowing through it.
function sseTap() {
    const decoder = new TextDecoder();
    let buf = '';
    let data = [];
    const line = (l) => {
        if (l === '') {
            if (data.length) parseAndRecord(data.join('\n'), 'SSE data');
            data = [];
            return;
        }
        if (l.startsWith(':')) return;
        const i = l.indexOf(':');
        const field = i < 0 ? l : l.slice(0, i);
        let value = i < 0 ? '' : l.slice(i + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
    };
    const drain = (final) => {
        for (;;) {
            const m = /\r\n|\r|\n/.exec(buf);
            if (!m) break;
            // A lone trailing \r may be the first half of \r\n: wait for more input.
            if (!final && m[0] === '\r' && m.index === buf.length - 1) break;
            line(buf.slice(0, m.index));
            buf = buf.slice(m.index + m[0].length);
        }
    };
    return new TransformStream({
        transform(chunk, controller) {
            buf += decoder.decode(chunk, { stream: true });
            drain(false);
            controller.enqueue(chunk);
        },
        flush() {
            buf += decoder.decode();
            drain(true); // an unterminated last event is dropped, as an SSE client does
        },
    });
}

function rewrap(res, body) {
    const out = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    Object.defineProperty(out, 'url', { value: res.url });
    return out;
}

async function recordingFetch(input, init) {
    if (init && typeof init.body === 'string') recordSent(init.body);
    const res = await fetch(input, init);
    if (!res.body || [101, 204, 205, 304].includes(res.status)) return res;
    const ct = (res.headers.get('content-type') || '').split(';')[0].trim().toLowerCase();
    if (ct === 'application/json') {
        const text = await res.text();
        parseAndRecord(text, `HTTP ${res.status} JSON`);
        return rewrap(res, text);
    }
    if (ct === 'text/event-stream') return rewrap(res, res.body.pipeThrough(sseTap()));
    return res;
}

// Raw view of what happened on the wire since received[from].
const isResponse = (m) => m && typeof m === 'object' && !('method' in m) && ('result' in m || 'error' in m);
const methodOf = (m) => sentById.get(JSON.stringify(m.id))?.method;
function rawResponses(method, from) {
    return received.slice(from).filter((m) => isResponse(m) && methodOf(m) === method);
}
function lastRawResult(method, from) {
    const r = rawResponses(method, from).filter((m) => 'result' in m);
    return r.length ? r[r.length - 1].result : undefined;
}

// ---------------------------------------------------------------- client
// plan.elicitation ("accept" | "decline" | "cancel"): declare form elicitation and answer
// every elicitation/create with that action; the request's params are kept in `elicited`.
// plan.connect ({"secret"?}): declare form and URL elicitation; a URL-mode request (a Manifold
// connect link) is opened as a person would (openConnectPage) and accepted.
const elicited = [];
const elicitation = plan.connect ? { elicitation: { form: {}, url: {} } } : plan.elicitation ? { elicitation: { form: {} } } : {};
const client = new Client(
    { name: 'manifold-interop-ts', version: '0.0.0' },
    { capabilities: { sampling: {}, ...elicitation } },
);
// What a person does with a connect link: opens the page, types the code the message names
// and, for a key, pastes it. Its own fetches: no MCP bearer token, no redirects followed.
async function openConnectPage(link, message, secret) {
    const page = await fetch(link, { redirect: 'manual' });
    const text = await page.text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(text);
    const code = /the code ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(message ?? '');
    if (page.status !== 200 || !csrf || !code) throw new Error(`connect page ${link}: HTTP ${page.status}, no form or no code`);
    const form = new URLSearchParams({ csrf: csrf[1], code: code[1], ...(secret !== undefined ? { secret } : {}) });
    const done = await fetch(link, { method: 'POST', body: form, redirect: 'manual' });
    if (done.status !== 200) throw new Error(`connect page ${link}: the form got HTTP ${done.status}`);
    log(`connected through ${link}`);
}
if (plan.connect) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
        elicited.push(req.params);
        if (req.params.mode !== 'url') return { action: 'decline' };
        await openConnectPage(req.params.url, req.params.message, plan.connect.secret);
        return { action: 'accept' };
    });
} else if (plan.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
        elicited.push(req.params);
        return { action: plan.elicitation };
    });
}
// Declared sampling capability: answer sampling/createMessage with a canned reply.
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'canned sampling reply from manifold-interop-ts' },
    model: 'manifold-interop-canned',
    stopReason: 'endTurn',
}));
client.onerror = (e) => log('client error:', e?.message ?? e);

// $MANIFOLD_BEARER: sent as `Authorization: Bearer <it>` on every request.
// `stdio:<JSON array>`: launch [command, ...args] and speak MCP on its stdin/stdout (its stderr
// is inherited); received messages are recorded from the transport itself.
const bearer = process.env.MANIFOLD_BEARER;
let transport;
if (url.startsWith('stdio:')) {
    const [command, ...args] = JSON.parse(url.slice('stdio:'.length));
    transport = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });
    let inner;
    Object.defineProperty(transport, 'onmessage', {
        get: () => inner && ((m) => { recordReceived(m); inner(m); }),
        set: (f) => { inner = f; },
    });
    const send = transport.send.bind(transport);
    transport.send = (m, o) => {
        recordSent(JSON.stringify(m));
        return send(m, o);
    };
} else {
    transport = new StreamableHTTPClientTransport(new URL(url), {
        fetch: recordingFetch,
        ...(bearer ? { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } } : {}),
    });
}
const reqOpts = plan.timeoutMs ? { timeout: plan.timeoutMs } : {};

function errorRecord(err, method, from) {
    let message = String(err?.message ?? err);
    if (err?.cause) message += ` (cause: ${err.cause?.message ?? err.cause})`;
    const rec = { message, code: null };
    if (err instanceof McpError) {
        rec.code = err.code;
        if (err.data !== undefined) rec.data = err.data;
    } else {
        if (err instanceof StreamableHTTPError) rec.httpStatus = err.code;
        // A JSON-RPC error that came in an HTTP error body: take its code from the wire.
        const errs = method ? rawResponses(method, from).filter((m) => 'error' in m) : [];
        if (errs.length) {
            const e = errs[errs.length - 1].error;
            rec.code = e?.code ?? null;
            if (e?.data !== undefined) rec.data = e.data;
        }
    }
    return rec;
}

let exitCode = 0;
const out = {
    protocolVersion: null,
    serverInfo: null,
    capabilities: null,
    instructions: null,
    negotiation: null, // always "initialize": this SDK version has no server/discover
    results: [],
    errors: [],
};
try {
    await client.connect(transport, reqOpts);
} catch (err) {
    const rec = errorRecord(err, 'initialize', 0);
    log(`connect/initialize failed: ${rec.message}`);
    out.errors.push({ step: null, op: 'connect', ...rec });
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(1);
}
out.negotiation = 'initialize';
const rawInit = lastRawResult('initialize', 0) ?? {}; // raw wire values, else the SDK's view
out.protocolVersion = transport.protocolVersion ?? rawInit.protocolVersion ?? null;
out.serverInfo = rawInit.serverInfo ?? client.getServerVersion() ?? null;
out.capabilities = rawInit.capabilities ?? client.getServerCapabilities() ?? null;
out.instructions = rawInit.instructions ?? client.getInstructions() ?? null;
log(`connected: protocol ${out.protocolVersion}, server ${JSON.stringify(out.serverInfo)}`);

// Concatenated `key` items of every page of a paginated list method (raw wire values).
async function listAll(method, key, list) {
    const items = [];
    let cursor;
    for (let page = 0; ; page++) {
        if (page >= 1000) throw new Error(`${method}: more than 1000 pages`);
        const pageFrom = received.length;
        const r = await list(cursor !== undefined ? { cursor } : undefined);
        const raw = lastRawResult(method, pageFrom) ?? r;
        items.push(...(raw[key] ?? []));
        cursor = raw.nextCursor;
        if (cursor === undefined || cursor === null) break;
    }
    return items;
}

const marks = []; // marks[i]: how many messages had been received when step i started
for (const [i, step] of plan.steps.entries()) {
    const from = received.length;
    marks.push(from);
    const sentFrom = sentSeq;
    let method = null;
    try {
        let result;
        switch (step.op) {
            case 'list_tools':
                method = 'tools/list';
                result = await listAll(method, 'tools', (p) => client.listTools(p, reqOpts));
                break;
            case 'list_prompts':
                method = 'prompts/list';
                result = await listAll(method, 'prompts', (p) => client.listPrompts(p, reqOpts));
                break;
            case 'list_resources':
                method = 'resources/list';
                result = await listAll(method, 'resources', (p) => client.listResources(p, reqOpts));
                break;
            case 'list_resource_templates':
                method = 'resources/templates/list';
                result = await listAll(method, 'resourceTemplates', (p) => client.listResourceTemplates(p, reqOpts));
                break;
            case 'get_prompt': {
                method = 'prompts/get';
                const params = { name: step.name };
                if (step.arguments !== undefined) params.arguments = step.arguments;
                const r = await client.getPrompt(params, reqOpts);
                result = lastRawResult(method, from) ?? r;
                break;
            }
            case 'read_resource': {
                method = 'resources/read';
                const r = await client.readResource({ uri: step.uri }, reqOpts);
                result = lastRawResult(method, from) ?? r;
                break;
            }
            case 'subscribe_resource': {
                method = 'resources/subscribe';
                const r = await client.subscribeResource({ uri: step.uri }, reqOpts);
                result = lastRawResult(method, from) ?? r;
                break;
            }
            case 'unsubscribe_resource': {
                method = 'resources/unsubscribe';
                const r = await client.unsubscribeResource({ uri: step.uri }, reqOpts);
                result = lastRawResult(method, from) ?? r;
                break;
            }
            case 'complete': {
                method = 'completion/complete';
                const params = { ref: step.ref, argument: step.argument };
                if (step.context !== undefined) params.context = step.context;
                const r = await client.complete(params, reqOpts);
                result = lastRawResult(method, from) ?? r;
                break;
            }
            case 'set_logging_level': {
                method = 'logging/setLevel';
                const r = await client.setLoggingLevel(step.level, reqOpts);
                result = lastRawResult(method, from) ?? r;
                break;
            }
            case 'wait_notifications': {
                const since = step.since ?? 0;
                if (!Number.isInteger(since) || since < 0 || since > i) {
                    throw new Error(`wait_notifications: bad since ${JSON.stringify(step.since)}`);
                }
                const want = step.count ?? 1;
                const deadline = Date.now() + (step.timeoutMs ?? 10000);
                log(`step ${i}: waiting for ${want} ${step.method}`); // every earlier step is done
                const matching = () =>
                    received
                        .slice(marks[since])
                        .filter((m) => m && typeof m === 'object' && m.method === step.method && !('id' in m))
                        .map((m) => m.params ?? {});
                while (matching().length < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
                result = matching();
                break;
            }
            case 'call_tool': {
                method = 'tools/call';
                const r = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, reqOpts);
                result = lastRawResult('tools/call', from) ?? r;
                break;
            }
            case 'call_tool_connecting': {
                // Session era: -32042 (URLElicitationRequiredError) names connect links; each is
                // opened, its notifications/elicitation/complete awaited, and the call made again.
                method = 'tools/call';
                const args = { name: step.name, arguments: step.arguments ?? {} };
                try {
                    const r = await client.callTool(args, undefined, reqOpts);
                    result = { result: lastRawResult('tools/call', from) ?? r };
                } catch (err) {
                    if (!(err instanceof McpError) || err.code !== -32042) throw err;
                    const asked = err.data?.elicitations ?? [];
                    for (const el of asked) await openConnectPage(el.url, el.message, plan.connect?.secret);
                    const ids = new Set(asked.map((el) => el.elicitationId));
                    const done = () =>
                        new Set(
                            received
                                .slice(from)
                                .filter((m) => m?.method === 'notifications/elicitation/complete' && !('id' in m))
                                .map((m) => m.params?.elicitationId),
                        );
                    const deadline = Date.now() + 10000;
                    while ([...ids].some((id) => !done().has(id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
                    const again = received.length;
                    const r = await client.callTool(args, undefined, reqOpts);
                    result = {
                        result: lastRawResult('tools/call', again) ?? r,
                        elicitations: asked,
                        completed: [...ids].filter((id) => done().has(id)).sort(),
                    };
                }
                break;
            }
            case 'call_tool_with_progress': {
                method = 'tools/call';
                let seen = 0;
                const r = await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, undefined, {
                    ...reqOpts,
                    onprogress: () => seen++,
                    resetTimeoutOnProgress: true,
                });
                // Progress tokens of the tools/call requests this step sent.
                const tokens = new Set(
                    [...sentById.values()]
                        .filter((s) => s.seq >= sentFrom && s.method === 'tools/call' && s.params?._meta?.progressToken !== undefined)
                        .map((s) => JSON.stringify(s.params._meta.progressToken)),
                );
                const progress = received
                    .slice(from)
                    .filter((m) => m?.method === 'notifications/progress' && tokens.has(JSON.stringify(m.params?.progressToken)))
                    .map((m) => m.params);
                if (progress.length !== seen) log(`note: onprogress fired ${seen}x, wire had ${progress.length}`);
                result = { result: lastRawResult('tools/call', from) ?? r, progress };
                break;
            }
            case 'ping':
                method = 'ping';
                await client.ping(reqOpts);
                result = {};
                break;
            default:
                throw new Error(`unknown plan op ${JSON.stringify(step.op)}`);
        }
        out.results.push(result);
    } catch (err) {
        const rec = errorRecord(err, method, from);
        log(`step ${i} (${step.op}) failed: ${rec.message}`);
        out.results.push({ error: rec });
        out.errors.push({ step: i, op: step.op, ...rec });
    }
}

try {
    if (transport.terminateSession) await transport.terminateSession();
} catch (e) {
    log('terminateSession failed (ignored):', e?.message ?? e);
}
try {
    await client.close();
} catch (e) {
    log('close failed (ignored):', e?.message ?? e);
}
if (wireFd !== null) fs.closeSync(wireFd);
if (plan.elicitation || plan.connect) out.elicited = elicited;
process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(exitCode));
