"""Checks of the fixture's Tasks extension that the conformance suite does not make.

The alpha's `tasks-status-notifications` is a placeholder (one SKIPPED check), and its other
scenarios never send a tasks/* request without `Mcp-Name`, never answer an outstanding key with
a non-object, and never look at a non-declaring client's listen. This script does, against a
running fixture, on the raw 2026-07-28 wire (Python standard library only):
  - server/discover advertises the extension and no `capabilities.tasks`;
  - subscriptions/listen with taskIds from a client without the extension: 400, -32021 with
    data.requiredCapabilities;
  - a listen with taskIds acknowledges only the ids of existing tasks, then carries
    `notifications/tasks` (the DetailedTask, with the listen's subscriptionId) as the task
    is answered and completes;
  - tasks/get without Mcp-Name: 400, -32020; a non-object answer to an outstanding key: -32602;
    tasks/cancel of an unknown id: -32602.

Usage: tasks_selfcheck.py http://127.0.0.1:<port>/mcp   (exit 0: all passed; 1: a check failed)
Every wait is bounded (HTTP_TIMEOUT per read, LISTEN_DEADLINE for the notifications).
Not here: anything the suite's tasks-* scenarios already check.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from typing import Any
from urllib.parse import urlsplit

EXT = "io.modelcontextprotocol/tasks"
VERSION = "2026-07-28"
HTTP_TIMEOUT = 10.0  # seconds, any one read
LISTEN_DEADLINE = 10.0  # seconds for the listen stream to show the task completed
NAME_BEARING = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

failures: list[str] = []
next_id = 0


def check(ok: bool, what: str, got: Any = None) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": got {json.dumps(got)[:300]}"))
    if not ok:
        failures.append(what)


def request(method: str, params: dict[str, Any], *, ext: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """Body and headers of a 2026-07-28 request, built as the suite's harness builds them."""
    global next_id
    next_id += 1
    caps: dict[str, Any] = {"elicitation": {}, "extensions": {EXT: {}}} if ext else {}
    meta = {
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-selfcheck", "version": "1"},
        "io.modelcontextprotocol/protocolVersion": VERSION,
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if method in NAME_BEARING and isinstance(params.get(NAME_BEARING[method]), str):
        headers["Mcp-Name"] = params[NAME_BEARING[method]]
    body = {"jsonrpc": "2.0", "id": next_id, "method": method, "params": {**params, "_meta": meta}}
    return body, headers


class Server:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path

    def open(self, method: str, params: dict[str, Any], *, ext: bool = True, drop: tuple[str, ...] = ()):
        body, headers = request(method, params, ext=ext)
        for name in drop:
            headers.pop(name, None)
        conn = http.client.HTTPConnection(self.host, self.port, timeout=HTTP_TIMEOUT)
        conn.request("POST", self.path, json.dumps(body), headers)
        return conn, conn.getresponse()

    def call(self, method: str, params: dict[str, Any], **kw: Any) -> tuple[int, dict[str, Any]]:
        """One request; (HTTP status, the JSON-RPC response), whether JSON or one SSE event."""
        conn, resp = self.open(method, params, **kw)
        try:
            if resp.getheader("Content-Type", "").startswith("text/event-stream"):
                for frame in sse_frames(resp):
                    if "id" in frame:
                        return resp.status, frame
                return resp.status, {}
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()


def sse_frames(resp: http.client.HTTPResponse):
    data: list[str] = []
    while True:
        try:
            line = resp.readline()
        except TimeoutError:  # nothing for HTTP_TIMEOUT: the caller's check reports what is missing
            return
        if not line:
            return
        text = line.decode().rstrip("\r\n")
        if text.startswith("data:"):
            data.append(text[5:].strip())
        elif text == "" and data:
            yield json.loads("\n".join(data))
            data = []


def wait_status(srv: Server, task_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + LISTEN_DEADLINE
    while True:
        _, res = srv.call("tasks/get", {"taskId": task_id})
        got = res.get("result", {})
        if got.get("status") == status or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def main(url: str) -> int:
    srv = Server(url)
    _, res = srv.call("server/discover", {})
    caps = res.get("result", {}).get("capabilities", {})
    check(EXT in (caps.get("extensions") or {}) and "tasks" not in caps, "discover advertises the extension only", caps)

    status, res = srv.call("subscriptions/listen", {"notifications": {"taskIds": ["x"]}}, ext=False)
    err = res.get("error", {})
    required = ((err.get("data") or {}).get("requiredCapabilities") or {}).get("extensions") or {}
    ok = status == 400 and err.get("code") == -32021 and EXT in required
    check(ok, "listen taskIds without ext: 400 -32021", res)

    _, res = srv.call("tools/call", {"name": "confirm_delete", "arguments": {"filename": "selfcheck.txt"}})
    task_id = res.get("result", {}).get("taskId")
    check(isinstance(task_id, str) and res["result"].get("resultType") == "task", "confirm_delete makes a task", res)
    if not isinstance(task_id, str):
        return 1
    asked = wait_status(srv, task_id, "input_required")
    keys = list(asked.get("inputRequests") or {})
    check(asked.get("status") == "input_required" and len(keys) == 1, "the task asks one question", asked)

    status, res = srv.call("tasks/get", {"taskId": task_id}, drop=("Mcp-Name",))
    check(status == 400 and res.get("error", {}).get("code") == -32020, "tasks/get without Mcp-Name: 400 -32020", res)
    _, res = srv.call("tasks/update", {"taskId": task_id, "inputResponses": {keys[0]: "yes"}} if keys else {})
    check(res.get("error", {}).get("code") == -32602, "a non-object answer to an outstanding key: -32602", res)
    _, res = srv.call("tasks/cancel", {"taskId": "selfcheck-unknown"})
    check(res.get("error", {}).get("code") == -32602, "tasks/cancel of an unknown id: -32602", res)

    listen = {"notifications": {"toolsListChanged": True, "taskIds": [task_id, "selfcheck-unknown"]}}
    conn, resp = srv.open("subscriptions/listen", listen)
    try:
        frames = sse_frames(resp)
        ack = next(frames, {})
        honored = ack.get("params", {}).get("notifications", {})
        check(
            ack.get("method") == "notifications/subscriptions/acknowledged"
            and honored.get("taskIds") == [task_id]
            and honored.get("toolsListChanged") is True,
            "listen acknowledges the existing task id only (and the standard kinds)",
            ack,
        )
        subscription = ack.get("params", {}).get("_meta", {}).get("io.modelcontextprotocol/subscriptionId")
        answer = {"action": "accept", "content": {"confirm": True}}
        _, res = srv.call("tasks/update", {"taskId": task_id, "inputResponses": {k: answer for k in keys}})
        ack_members = set(res.get("result", {})) - {"_meta"}
        check(ack_members == {"resultType"} and res["result"]["resultType"] == "complete", "update: an empty ack", res)
        seen: list[str] = []
        final: dict[str, Any] = {}
        deadline = time.monotonic() + LISTEN_DEADLINE
        for frame in frames:
            params = frame.get("params", {})
            if frame.get("method") == "notifications/tasks" and params.get("taskId") == task_id:
                seen.append(params.get("status"))
                final = params
            if final.get("status") == "completed" or time.monotonic() > deadline:
                break
        check(seen[-1:] == ["completed"], "notifications/tasks follow the task to completed", seen)
        check(
            "Deleted selfcheck.txt" in json.dumps(final.get("result"))
            and final.get("_meta", {}).get("io.modelcontextprotocol/subscriptionId") == subscription,
            "the notification is the DetailedTask, stamped with the subscriptionId",
            final,
        )
    finally:
        conn.close()
    print(f"tasks-selfcheck: {len(failures)} failed" if failures else "tasks-selfcheck: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
