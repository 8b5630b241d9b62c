// Preload that forces every TCP listen() of a Node process onto 127.0.0.1 and reports
// the real address. Needed because @modelcontextprotocol/server-everything's
// streamableHttp mode calls `app.listen(PORT)` with no host, i.e. on all interfaces.
//
//   PORT=0 "$MANIFOLD_NODE" --import "$REPO/tests/interop/ts/bind-localhost.mjs" \
//     "$MANIFOLD_NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
//
// On stderr it prints, once per listening server:
//   manifold-interop: listening on 127.0.0.1:<port>
// (PORT=0 lets the OS choose a free port; read it from that line.)
// MANIFOLD_BIND_HOST overrides the host (default 127.0.0.1).
import net from 'node:net';

const HOST = process.env.MANIFOLD_BIND_HOST || '127.0.0.1';
const origListen = net.Server.prototype.listen;

const isPort = (v) => typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));

net.Server.prototype.listen = function (...args) {
    if (args.length === 0 || typeof args[0] === 'function') {
        args.unshift(0, HOST); // listen() / listen(cb): random port
    } else if (isPort(args[0])) {
        if (typeof args[1] === 'string') args[1] = HOST; // listen(port, host, ...)
        else args.splice(1, 0, HOST); // listen(port[, backlog][, cb])
    } else if (args[0] !== null && typeof args[0] === 'object' && !('path' in args[0]) && !('fd' in args[0]) && !('_handle' in args[0])) {
        args[0] = { ...args[0], host: HOST }; // listen({port, host?, ...})
    }
    this.once('listening', () => {
        const a = this.address();
        if (a && typeof a === 'object') {
            process.stderr.write(`manifold-interop: listening on ${a.address}:${a.port}\n`);
        }
    });
    return origListen.apply(this, args);
};
