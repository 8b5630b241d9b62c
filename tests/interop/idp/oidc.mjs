// A real OpenID provider (node-oidc-provider, pinned in tests/interop/package.json) and an MCP
// resource server that accepts only its access tokens, for Manifold's `user_oauth` interop test.
//
// Usage: "$MANIFOLD_NODE" tests/interop/idp/oidc.mjs <redirect_uri> [<gateway resource>]
// Prints one line on stdout once listening: `oidc-interop: listening on http://127.0.0.1:<port>`.
//   issuer        http://127.0.0.1:<port>          (discovery: /.well-known/openid-configuration)
//   client        manifold / manifold-secret        (client_secret_basic; redirect_uri as given)
//   client        cli, public (PKCE), redirect http://127.0.0.1:1/cb: gets callers' access tokens
//                 for the gateway resource (JWT, audience: the resource asked)
//   resource      http://127.0.0.1:<port>/mcp       (RFC 8707: JWT access tokens for it, 30 s)
//   login         devInteractions: any login name, any password; the grant is given at once
//   GET /revoke-all  revokes every grant (the next refresh fails)
// The MCP server at /mcp: initialize and tools/list are open; tools/call needs
// `Authorization: Bearer <access token>` that verifies against the provider's keys with
// this issuer and the resource as audience, and answers `whoami` with the token's `sub`.
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.MANIFOLD_NODE_MODULES;
if (!modules) {
    console.error('oidc-interop: MANIFOLD_NODE_MODULES is not set (run scripts/peers)');
    process.exit(2);
}
const load = (name, file) => import(pathToFileURL(path.join(modules, name, file)).href);
const { default: Provider } = await load('oidc-provider', 'lib/index.js');
const jose = await load('jose', 'dist/webapi/index.js');

const redirect = process.argv[2];
if (!redirect) {
    console.error('usage: oidc.mjs <redirect_uri>');
    process.exit(2);
}

const server = http.createServer();
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;
const resource = `${base}/mcp`;

const { privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
const jwk = { ...(await jose.exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: 'k1' };

const provider = new Provider(base, {
    clients: [
        {
            client_id: 'manifold',
            client_secret: 'manifold-secret',
            redirect_uris: [redirect],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
            id_token_signed_response_alg: 'ES256',
        },
        {
            client_id: 'cli',
            redirect_uris: ['http://127.0.0.1:1/cb'],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none',
            id_token_signed_response_alg: 'ES256',
        },
    ],
    jwks: { keys: [jwk] },
    scopes: ['openid', 'offline_access', 'mcp'],
    features: {
        devInteractions: { enabled: true },
        revocation: { enabled: true },
        resourceIndicators: {
            enabled: true,
            defaultResource: () => resource,
            useGrantedResource: () => true,
            getResourceServerInfo: (_ctx, indicator) => ({
                scope: 'mcp',
                audience: indicator,
                accessTokenFormat: 'jwt',
                accessTokenTTL: 30,
                jwt: { sign: { alg: 'ES256' } },
            }),
        },
    },
    pkce: { required: () => true },
    // Refresh tokens for this client whatever the scope asked.
    issueRefreshToken: async () => true,
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    // The grant is given at once (no consent screen): every scope, the resource.
    loadExistingGrant: async (ctx) => {
        const grant = new ctx.oidc.provider.Grant({
            clientId: ctx.oidc.client.clientId,
            accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope('openid offline_access mcp');
        grant.addResourceScope(ctx.oidc.params.resource ?? resource, 'mcp');
        await grant.save();
        grants.push(grant.jti);
        return grant;
    },
});
provider.proxy = false;
const grants = [];
const keys = jose.createLocalJWKSet({ keys: [{ ...jwk, d: undefined }] });

function reply(res, status, body, headers = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body === undefined ? '' : JSON.stringify(body));
}

async function mcp(req, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    let msg;
    try {
        msg = JSON.parse(body);
    } catch {
        return reply(res, 400, { error: 'not JSON' });
    }
    if (msg.id === undefined) return reply(res, 202);
    const ok = (result) => reply(res, 200, { jsonrpc: '2.0', id: msg.id, result });
    switch (msg.method) {
        case 'initialize':
            return ok({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'oidc-rs', version: '1' } });
        case 'tools/list':
            return ok({ tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] });
        case 'ping':
            return ok({});
        case 'tools/call': {
            const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
            try {
                const { payload } = await jose.jwtVerify(token, keys, { issuer: base, audience: resource });
                return ok({ content: [{ type: 'text', text: payload.sub }] });
            } catch {
                return reply(res, 401, undefined, { 'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` });
            }
        }
        default:
            return reply(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    }
}

const callback = provider.callback();
server.on('request', async (req, res) => {
    if (req.url === '/mcp') return mcp(req, res);
    if (req.url === '/revoke-all') {
        for (const jti of grants.splice(0)) {
            const g = await provider.Grant.find(jti);
            if (g) await g.destroy();
        }
        return reply(res, 200, {});
    }
    return callback(req, res);
});
console.log(`oidc-interop: listening on ${base}`);
