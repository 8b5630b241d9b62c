"""Scriptable fake Streamable-HTTP MCP server (stdlib only) for testing the interop drivers.

    python3 tests/interop/py/fake_server.py <discover-mode> [--log FILE]

Listens on 127.0.0.1 on a free port and prints `listening on 127.0.0.1:<port>` to stdout
(path: any, e.g. /mcp). Speaks the 2025-11-25 initialize handshake with one session, answers
tools/list (two pages), tools/call (`echo`; `fail` -> JSON-RPC -32602 at HTTP 200; `fail400` ->
the same error at HTTP 400; `slow` -> SSE with 2 progress notifications when a progressToken is
given) and ping. `server/discover` is answered according to <discover-mode>:

    404        HTTP 404, empty body              202        HTTP 202, empty body
    405        HTTP 405, empty body              500        HTTP 500, empty body
    400json    HTTP 400 + JSON-RPC error -32600  200err     HTTP 200 + JSON-RPC error -32601
    404json    HTTP 404 + JSON-RPC error -32601  sse-err    HTTP 200 SSE carrying error -32601
    text       HTTP 200 text/plain body          legacyok   HTTP 200 DiscoverResult listing only 2025-11-25
    32022old   -32022, data.supported=["2025-11-25"]
    32022new   -32022, data.supported=["2026-07-28"]  (modern-only: the Python client must fail)
    32022nodata -32022 without data
    modern     HTTP 200 DiscoverResult with 2026-07-28 (Python client adopts the modern era)

Every request line, headers and body is appended to --log as JSON lines (for inspection).
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "404"
LOG = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
_lock = threading.Lock()
SESSIONS: set[str] = set()

TOOLS = [
    {"name": "echo", "description": "echo", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "fail", "inputSchema": {"type": "object"}},
    {"name": "fail400", "inputSchema": {"type": "object"}},
    {"name": "slow", "inputSchema": {"type": "object"}},
]


def rpc_error(id_, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):  # quiet
        pass

    def _log(self, body):
        if LOG:
            with _lock, open(LOG, "a") as f:
                f.write(json.dumps({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}) + "\n")

    def _send(self, status, body=None, ctype="application/json", headers=None):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        if body is not None:
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events, headers=None):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        for ev in events:
            self.wfile.write(b"event: message\r\ndata: " + json.dumps(ev).encode() + b"\r\n\r\n")
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        self._log(None)
        self._send(405)

    def do_DELETE(self):
        self._log(None)
        SESSIONS.discard(self.headers.get("mcp-session-id", ""))
        self._send(200)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0") or 0))
        try:
            msg = json.loads(raw)
        except ValueError:
            self._log(raw.decode("utf-8", "replace"))
            return self._send(400, rpc_error(None, -32700, "Parse error"))
        self._log(msg)
        method, id_ = msg.get("method"), msg.get("id")
        if method == "server/discover":
            return self.discover(id_)
        if method == "initialize":
            sid = uuid.uuid4().hex
            SESSIONS.add(sid)
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "0"},
            }
            return self._send(200, {"jsonrpc": "2.0", "id": id_, "result": result}, headers={"mcp-session-id": sid})
        if self.headers.get("mcp-session-id") not in SESSIONS:
            return self._send(404, rpc_error(id_, -32001, "Session not found"))
        if id_ is None:  # notification or response
            return self._send(202)
        if method == "ping":
            return self._send(200, {"jsonrpc": "2.0", "id": id_, "result": {}})
        if method == "tools/list":
            cursor = (msg.get("params") or {}).get("cursor")
            page = {"tools": TOOLS[2:]} if cursor == "p2" else {"tools": TOOLS[:2], "nextCursor": "p2"}
            return self._send(200, {"jsonrpc": "2.0", "id": id_, "result": page})
        if method == "tools/call":
            p = msg.get("params") or {}
            name = p.get("name")
            if name == "echo":
                text = str((p.get("arguments") or {}).get("message", ""))
                return self._send(200, {"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})
            if name == "fail":
                return self._send(200, rpc_error(id_, -32602, "fail on purpose", {"why": "test"}))
            if name == "fail400":
                return self._send(400, rpc_error(id_, -32602, "fail400 on purpose"))
            if name == "slow":
                tok = (p.get("_meta") or {}).get("progressToken")
                evs = []
                if tok is not None:
                    for i in (1, 2):
                        evs.append({"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": tok, "progress": i, "total": 2}})
                evs.append({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "done"}]}})
                return self._sse(evs)
            return self._send(200, rpc_error(id_, -32602, f"Unknown tool: {name}"))
        return self._send(200, rpc_error(id_, -32601, "Method not found"))

    def discover(self, id_):
        m = MODE
        if m in ("404", "405", "500", "202"):
            return self._send(int(m))
        if m == "400json":
            return self._send(400, rpc_error(id_, -32600, "Bad Request: no session"))
        if m == "404json":
            return self._send(404, rpc_error(id_, -32601, "Method not found"))
        if m == "200err":
            return self._send(200, rpc_error(id_, -32601, "Method not found: server/discover"))
        if m == "sse-err":
            return self._sse([rpc_error(id_, -32601, "Method not found")])
        if m == "text":
            return self._send(200, b"hello", ctype="text/plain")
        if m == "32022old":
            return self._send(200, rpc_error(id_, -32022, "Unsupported protocol version",
                                             {"supported": ["2025-11-25"], "requested": "2026-07-28"}))
        if m == "32022new":
            return self._send(200, rpc_error(id_, -32022, "Unsupported protocol version",
                                             {"supported": ["2026-07-28"], "requested": "2026-07-28"}))
        if m == "32022nodata":
            return self._send(200, rpc_error(id_, -32022, "Unsupported protocol version"))
        if m in ("legacyok", "modern"):
            versions = ["2025-11-25"] if m == "legacyok" else ["2026-07-28"]
            result = {"supportedVersions": versions, "capabilities": {"tools": {}}, "resultType": "complete",
                      "ttlMs": 0, "cacheScope": "private"}
            return self._send(200, {"jsonrpc": "2.0", "id": id_, "result": result})
        return self._send(500)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
