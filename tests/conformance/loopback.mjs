// Preload for the conformance CLI in *client* mode: keeps the suite's mock servers on
// 127.0.0.1. The suite calls `app.listen(0)` (all interfaces) and reads `server.address().port`
// synchronously right after, so the usual trick of adding a host argument does not work
// (listen(port, host) resolves the host first and binds a tick later: address() is still null).
// Instead a TCP handle is bound to 127.0.0.1:<port> synchronously and handed to listen(handle),
// which keeps listen() synchronous. Listens with an explicit host get the host replaced.
//
//   "$MANIFOLD_NODE" --import "$REPO/tests/conformance/loopback.mjs" .../conformance/dist/index.js client ...
import net from 'node:net';

const HOST = '127.0.0.1';
const origListen = net.Server.prototype.listen;
let TCP = null;
let constants = null;
try {
    ({ TCP, constants } = process.binding('tcp_wrap'));
} catch {
    TCP = null;
}

const isPort = (v) => typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));

function boundHandle(port) {
    if (!TCP) return null;
    const h = new TCP(constants.SERVER);
    const err = h.bind(HOST, Number(port));
    if (err !== 0) {
        h.close();
        return null;
    }
    return h;
}

net.Server.prototype.listen = function (...args) {
    let port = null;
    let rest = args;
    if (args.length === 0 || typeof args[0] === 'function') {
        port = 0; // listen() / listen(cb)
    } else if (isPort(args[0]) && typeof args[1] !== 'string') {
        port = args[0]; // listen(port[, backlog][, cb])
        rest = args.slice(1);
    } else if (isPort(args[0]) && typeof args[1] === 'string') {
        args[1] = HOST; // listen(port, host, ...)
    } else if (args[0] !== null && typeof args[0] === 'object' && !('path' in args[0]) && !('fd' in args[0]) && !('_handle' in args[0]) && !(TCP && args[0] instanceof TCP)) {
        args[0] = { ...args[0], host: HOST }; // listen({port, host?, ...})
    }
    if (port !== null) {
        const h = boundHandle(port);
        if (h) return origListen.call(this, h, ...rest);
        args = [Number(port), HOST, ...rest];
    }
    return origListen.apply(this, args);
};
