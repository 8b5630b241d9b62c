// OAuth discovery with the official TypeScript SDK's own functions, against an MCP
// endpoint that requires authentication: POST initialize without credentials, read the
// 401's WWW-Authenticate as the SDK does, then fetch the protected resource metadata
// (RFC 9728) the way the SDK's auth flow does.
//
// Usage: "$MANIFOLD_NODE" tests/interop/ts/discover.mjs <url>
// Prints ONE JSON object: {"status", "wwwAuthenticate", "params": {resourceMetadataUrl,
// scope, error}, "metadata": <the PRM document or {"error": message}>}.
// Exit status: 0 when it ran (whatever it found), 2 on bad usage.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url] = process.argv.slice(2);
if (!url) {
    console.error('usage: discover.mjs <url>');
    process.exit(2);
}
const NM = process.env.MANIFOLD_NODE_MODULES;
const authFile = NM && path.join(NM, '@modelcontextprotocol', 'sdk', 'dist', 'esm', 'client', 'auth.js');
if (!authFile || !fs.existsSync(authFile)) {
    console.error('MANIFOLD_NODE_MODULES does not hold @modelcontextprotocol/sdk (run scripts/peers)');
    process.exit(2);
}
const { extractWWWAuthenticateParams, discoverOAuthProtectedResourceMetadata } = await import(
    pathToFileURL(authFile).href
);

const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'discover', version: '0' } },
    }),
});
const params = extractWWWAuthenticateParams(res);
let metadata;
try {
    metadata = await discoverOAuthProtectedResourceMetadata(url, {
        resourceMetadataUrl: params.resourceMetadataUrl,
    });
} catch (e) {
    metadata = { error: String(e?.message ?? e) };
}
console.log(
    JSON.stringify({
        status: res.status,
        wwwAuthenticate: res.headers.get('www-authenticate'),
        params: {
            resourceMetadataUrl: params.resourceMetadataUrl?.href ?? null,
            scope: params.scope ?? null,
            error: params.error ?? null,
        },
        metadata,
    }),
);
