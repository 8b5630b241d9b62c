"""Manifold interop driver: the official Python MCP SDK (mcp 2.x) client over Streamable HTTP.

Usage:
    "$MANIFOLD_PYTHON" tests/interop/py/client.py <url> '<plan json>'
    plan: {"steps":[{"op":"list_tools"},{"op":"call_tool","name":"echo","arguments":{...}},
                    {"op":"call_tool_with_progress","name":"...","arguments":{...}},{"op":"ping"}],
           "timeoutMs": 60000, "mode": "auto"}
    (timeoutMs: optional per-request read timeout, default 60 s; mode: optional connect mode of
     mcp.Client - "auto" (default: server/discover probe, falling back to initialize),
     "legacy" (initialize only) or a modern revision such as "2026-07-28".)
    plan.connect: {"secret": <key>?} declares elicitation (form and url) and opens every URL-mode
    connect link (a Manifold `user_oauth`/`user_secret` upstream) as a person would: GET the page,
    POST the code the message names (and the key); then accepts. Its requests land in "elicited".
    More ops (same semantics in ts/client.mjs; see tests/interop/README.md):
      {"op":"call_tool_connecting","name":..,"arguments":{..}}  session era: on -32042, opens each
          link, waits for its notifications/elicitation/complete, calls again ->
          {"result", "elicitations": [..], "completed": [elicitationId..]}
      {"op":"list_prompts"} | {"op":"list_resources"} | {"op":"list_resource_templates"}
          every page; the result is the concatenated prompts / resources / resourceTemplates
      {"op":"get_prompt","name":..,"arguments":{..}?}      -> the raw prompts/get result
      {"op":"read_resource","uri":..}                      -> the raw resources/read result
      {"op":"subscribe_resource","uri":..} | {"op":"unsubscribe_resource","uri":..}  -> {} (raw)
      {"op":"complete","ref":{"type":"ref/prompt","name":..}|{"type":"ref/resource","uri":..},
       "argument":{"name":..,"value":..},"context":{"arguments":{..}}?}
          -> the raw completion/complete result
      {"op":"set_logging_level","level":..}                -> {} (raw)
      {"op":"wait_notifications","method":..,"since":<step index, default 0>,"count":<default 1>,
       "timeoutMs":<default 10000>}
          waits until `count` notifications with that method have been received (POST response
          streams and the GET stream alike) since step `since` started, or until timeoutMs;
          never fails: the result is the list of their `params` ({} when absent), possibly
          shorter than `count` (so count:1 with a short timeoutMs checks that none arrives).
          On stderr it logs "step <i>: waiting for <count> <method>" as it starts waiting.

Prints ONE JSON object on stdout:
    {"protocolVersion", "serverInfo", "capabilities", "instructions",
     "negotiation": "initialize" | "discover", "results": [...], "errors": [...]}
results[i] is the raw JSON-RPC `result` of step i as received on the wire (list_tools and the
other list ops: the concatenated items of all pages; call_tool_with_progress: {"result",
"progress": [params...]}; ping: {}; wait_notifications: [params...]), or
{"error": {"message", "code"}} when the step failed (the run goes on). errors[] repeats the
failures as {"step", "op", "message", "code"}; a failed connect is reported as
{"step": null, "op": "connect", ...}. Logs go to stderr.
Exit status: 0 when connected and the plan ran (even with failed steps), 1 when the client could
not connect, 2 on bad usage.

SDK API used (mcp 2.3.0): `mcp.Client(transport, mode="auto")`, where the transport is
`mcp.client.streamable_http.streamable_http_client(url, http_client=...)`. In mode "auto" the
client first POSTs `server/discover` (2026-07-28 envelope) and falls back to the `initialize`
handshake (2025-11-25) on any JSON-RPC error except -32022 naming only modern versions; see
tests/interop/README.md for the exact rules.

Wire log: every JSON-RPC message RECEIVED from the server is appended, as parsed JSON, one per
line, to the file named by $MANIFOLD_WIRE_LOG (truncated at start). Hook: the httpx2 client
handed to the SDK transport gets a wrapping `AsyncBaseTransport` that tees each response's byte
stream (application/json bodies and text/event-stream events, on POST responses and on the GET
stream alike) into a parser as the SDK reads it. So the log holds exactly what the server sent,
before pydantic validation, and never the errors the SDK synthesizes itself (e.g. for a bare
HTTP 404). JSON-RPC batches are split into one line per message; SSE events with empty data are
skipped. Outgoing requests are parsed from request bodies to map ids to methods.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
import warnings
import zlib
from typing import Any

USAGE = "usage: client.py <url> '<plan json>'"


def log(*a: Any) -> None:
    print("[py-client]", *a, file=sys.stderr, flush=True)


def usage(msg: str) -> None:
    print(f"py-client: {msg}\n{USAGE}", file=sys.stderr)
    sys.exit(2)


try:
    import anyio
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
    from mcp.shared.exceptions import MCPError
except ImportError as e:  # pragma: no cover
    print(f"py-client: cannot import the mcp SDK ({e}); run with $MANIFOLD_PYTHON", file=sys.stderr)
    sys.exit(2)


# ------------------------------------------------------------------ wire recording
class Wire:
    def __init__(self, path: str | None) -> None:
        self.received: list[Any] = []
        self.sent: dict[str, dict[str, Any]] = {}  # json(id) -> {"method", "params", "seq"}
        self.sent_seq = 0
        self.file = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115

    def record_received(self, value: Any) -> None:
        for m in value if isinstance(value, list) else [value]:
            self.received.append(m)
            if self.file is not None:
                self.file.write(json.dumps(m, ensure_ascii=False) + "\n")
                self.file.flush()

    def parse_and_record(self, text: str, where: str) -> None:
        if not text.strip():
            return
        try:
            self.record_received(json.loads(text))
        except ValueError:
            log(f"WARNING: non-JSON {where} body not recorded: {text[:200]!r}")

    def record_sent(self, body: bytes) -> None:
        try:
            value = json.loads(body)
        except ValueError:
            return
        for m in value if isinstance(value, list) else [value]:
            if isinstance(m, dict) and isinstance(m.get("method"), str) and m.get("id") is not None:
                self.sent[json.dumps(m["id"])] = {"method": m["method"], "params": m.get("params"), "seq": self.sent_seq}
                self.sent_seq += 1

    def method_of(self, m: Any) -> str | None:
        if not isinstance(m, dict) or "method" in m or ("result" not in m and "error" not in m):
            return None
        s = self.sent.get(json.dumps(m.get("id")))
        return s["method"] if s else None

    def responses(self, method: str, start: int) -> list[dict[str, Any]]:
        return [m for m in self.received[start:] if self.method_of(m) == method]

    def last_result(self, method: str, start: int) -> Any:
        r = [m for m in self.responses(method, start) if "result" in m]
        return r[-1]["result"] if r else None

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class SSEParser:
    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.buf = ""
        self.data: list[str] = []
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, chunk: bytes, final: bool = False) -> None:
        self.buf += self.decoder.decode(chunk, final)
        while True:
            idx = [i for i in (self.buf.find("\r"), self.buf.find("\n")) if i >= 0]
            if not idx:
                break
            i = min(idx)
            if self.buf[i] == "\r":
                if i == len(self.buf) - 1 and not final:
                    break  # maybe the first half of \r\n
                n = 2 if self.buf[i : i + 2] == "\r\n" else 1
            else:
                n = 1
            self.line(self.buf[:i])
            self.buf = self.buf[i + n :]

    def line(self, line: str) -> None:
        if line == "":
            if self.data:
                self.wire.parse_and_record("\n".join(self.data), "SSE data")
            self.data = []
            return
        if line.startswith(":"):
            return
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self.data.append(value)


class TapStream(httpx2.AsyncByteStream):
    """Pass-through byte stream that feeds what it yields to a JSON or SSE parser."""

    def __init__(self, inner: Any, kind: str, encoding: str, wire: Wire, where: str) -> None:
        self.inner, self.kind, self.wire, self.where = inner, kind, wire, where
        self.body = bytearray()
        self.sse = SSEParser(wire) if kind == "sse" else None
        self.decomp = None
        if encoding in ("gzip", "x-gzip"):
            self.decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self.decomp = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            log(f"WARNING: content-encoding {encoding!r} not decoded; {where} not recorded")
            self.kind = "skip"

    def _plain(self, chunk: bytes) -> bytes:
        return self.decomp.decompress(chunk) if self.decomp is not None else chunk

    async def __aiter__(self):  # type: ignore[override]
        done = False
        try:
            async for chunk in self.inner:
                if self.kind == "json":
                    self.body += self._plain(chunk)
                elif self.sse is not None:
                    self.sse.feed(self._plain(chunk))
                yield chunk
            done = True
        finally:
            if done and self.kind == "json":
                self.wire.parse_and_record(self.body.decode("utf-8", "replace"), self.where)
            elif done and self.sse is not None:
                self.sse.feed(b"", final=True)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TapTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, wire: Wire) -> None:
        self.inner, self.wire = inner, wire

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            try:
                self.wire.record_sent(request.content)
            except Exception:  # noqa: BLE001 - a streaming body we cannot peek at
                pass
        response = await self.inner.handle_async_request(request)
        ct = response.headers.get("content-type", "").split(";")[0].strip().lower()
        kind = {"application/json": "json", "text/event-stream": "sse"}.get(ct)
        if kind is not None and response.status_code not in (101, 204, 205, 304):
            encoding = response.headers.get("content-encoding", "").strip().lower()
            where = f"HTTP {response.status_code} {ct}"
            response.stream = TapStream(response.stream, kind, encoding, self.wire, where)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


# ------------------------------------------------------------------ driver
def dump(model: Any) -> Any:
    if model is None:
        return None
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return model


def leaf_exception(e: BaseException) -> BaseException:
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return e


def error_record(err: BaseException, wire: Wire, method: str | None, start: int) -> dict[str, Any]:
    err = leaf_exception(err)
    if isinstance(err, MCPError):
        rec: dict[str, Any] = {"message": err.message, "code": err.code}
        if err.data is not None:
            rec["data"] = err.data
        return rec
    rec = {"message": f"{type(err).__name__}: {err}", "code": None}
    if method:
        errs = [m for m in wire.responses(method, start) if "error" in m]
        if errs and isinstance(errs[-1].get("error"), dict):
            rec["code"] = errs[-1]["error"].get("code")
    return rec


def raw_or(wire: Wire, method: str, start: int, model: Any) -> Any:
    """The raw wire result of the last `method` response since `start`, else the SDK's view."""
    raw = wire.last_result(method, start)
    return raw if raw is not None else dump(model)


def notifications_since(wire: Wire, start: int, method: Any) -> list[Any]:
    """The params of every `method` notification received since wire.received[start]."""
    return [
        m.get("params") or {}
        for m in wire.received[start:]
        if isinstance(m, dict) and m.get("method") == method and "id" not in m
    ]


# op -> (method, result key, Client method) of the paginated list ops
LISTS = {
    "list_tools": ("tools/list", "tools", "list_tools"),
    "list_prompts": ("prompts/list", "prompts", "list_prompts"),
    "list_resources": ("resources/list", "resources", "list_resources"),
    "list_resource_templates": ("resources/templates/list", "resourceTemplates", "list_resource_templates"),
}


async def list_all(wire: Wire, method: str, key: str, lister: Any) -> list[Any]:
    """The concatenated `key` items of every page of a paginated list method (raw wire values)."""
    items: list[Any] = []
    cursor: str | None = None
    for _page in range(1000):
        page_start = len(wire.received)
        r = await lister(cursor=cursor, cache_mode="bypass")
        raw_page = raw_or(wire, method, page_start, r)
        items.extend(raw_page.get(key, []))
        cursor = raw_page.get("nextCursor")
        if cursor is None:
            return items
    raise RuntimeError(f"{method}: more than 1000 pages")


async def sampling_callback(_ctx: Any, _params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="canned sampling reply from manifold-interop-py"),
        model="manifold-interop-canned",
        stop_reason="endTurn",
    )


async def open_connect_page(url: str, message: str, secret: str | None) -> None:
    """What the person does with a connect link (a `user_oauth`/`user_secret` upstream behind
    Manifold): opens the page, types the code their client showed (it is in the message) and,
    for a key, pastes it. A browser of its own: no MCP bearer token, no redirects followed."""
    import re

    async with httpx2.AsyncClient(trust_env=False, follow_redirects=False) as browser:
        page = await browser.get(url)
        found = re.search(r'name="csrf" value="([^"]+)"', page.text)
        code = re.search(r"the code ([A-Z0-9]{4}-[A-Z0-9]{4})", message)
        if page.status_code != 200 or not found or not code:
            raise RuntimeError(f"connect page {url}: HTTP {page.status_code}, no form or no code")
        form = {"csrf": found.group(1), "code": code.group(1)}
        if secret is not None:
            form["secret"] = secret
        done = await browser.post(url, data=form)
        if done.status_code != 200:
            raise RuntimeError(f"connect page {url}: the form got HTTP {done.status_code}")
        log(f"connected through {url}")


def elicitation_connecting(secret: str | None, elicited: list[Any]) -> Any:
    """plan.connect: an elicitation callback that opens URL-mode requests' connect pages (and
    accepts), and declines any other request."""

    async def callback(_ctx: Any, params: Any) -> types.ElicitResult:
        d = dump(params)
        elicited.append(d)
        if d.get("mode") == "url":
            await open_connect_page(d["url"], d.get("message", ""), secret)
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="decline")

    return callback


def elicitation_answering(action: str, elicited: list[Any]) -> Any:
    """An elicitation callback that records each request's params and answers `action`."""

    async def callback(_ctx: Any, params: Any) -> types.ElicitResult:
        elicited.append(dump(params))
        return types.ElicitResult(action=action)

    return callback


async def run(url: str, plan: dict[str, Any]) -> int:
    wire = Wire(os.environ.get("MANIFOLD_WIRE_LOG"))
    timeout = float(plan.get("timeoutMs", 60000)) / 1000.0
    out: dict[str, Any] = {
        "protocolVersion": None,
        "serverInfo": None,
        "capabilities": None,
        "instructions": None,
        "negotiation": None,
        "results": [],
        "errors": [],
    }
    elicited: list[Any] = []
    if plan.get("elicitation") or plan.get("connect"):
        out["elicited"] = elicited
    connect = plan.get("connect")
    if connect is not None:
        callback: Any = elicitation_connecting(connect.get("secret"), elicited)
    elif plan.get("elicitation"):
        callback = elicitation_answering(plan["elicitation"], elicited)
    else:
        callback = None
    # Same timeouts as the SDK's create_mcp_http_client(); trust_env=False so that a proxy set
    # in the environment never sits between the driver and the local server under test.
    # $MANIFOLD_BEARER: sent as `Authorization: Bearer <it>` on every request.
    bearer = os.environ.get("MANIFOLD_BEARER")
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {bearer}"} if bearer else None,
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=TapTransport(httpx2.AsyncHTTPTransport(), wire),
        trust_env=False,
    )
    # `stdio:<JSON array>`: launch [command, ...args] and speak MCP over its stdin/stdout.
    if url.startswith("stdio:"):
        argv = json.loads(url[len("stdio:"):])
        server: Any = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    else:
        server = streamable_http_client(url, http_client=http)
    client = Client(
        server,
        mode=plan.get("mode", "auto"),
        cache=None,
        read_timeout_seconds=timeout,
        sampling_callback=sampling_callback,
        elicitation_callback=callback,
        client_info=types.Implementation(name="manifold-interop-py", version="0.0.0"),
    )
    code = 0
    async with http:
        try:
            await client.__aenter__()
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            method = "initialize" if wire.responses("initialize", 0) else "server/discover"
            rec = error_record(e, wire, method, 0)
            log(f"connect failed: {rec['message']}")
            out["errors"].append({"step": None, "op": "connect", **rec})
            print(json.dumps(out), flush=True)
            wire.close()
            return 1
        try:
            session = client.session
            if session.discover_result is not None:
                out["negotiation"] = "discover"
                raw = wire.last_result("server/discover", 0) or {}
                out["capabilities"] = raw.get("capabilities", dump(client.server_capabilities))
            else:
                out["negotiation"] = "initialize"
                raw = wire.last_result("initialize", 0) or {}
                out["capabilities"] = raw.get("capabilities", dump(client.server_capabilities))
            out["protocolVersion"] = client.protocol_version
            out["serverInfo"] = raw.get("serverInfo", dump(client.server_info))
            out["instructions"] = raw.get("instructions", client.instructions)
            log(f"connected via {out['negotiation']}: protocol {out['protocolVersion']}, server {out['serverInfo']}")

            marks: list[int] = []  # marks[i]: how many messages had been received when step i started
            for i, step in enumerate(plan["steps"]):
                start, sent_start = len(wire.received), wire.sent_seq
                marks.append(start)
                op = step.get("op")
                method: str | None = None
                try:
                    if op in LISTS:
                        method, key, lister = LISTS[op]
                        result: Any = await list_all(wire, method, key, getattr(client, lister))
                    elif op == "call_tool":
                        method = "tools/call"
                        r = await client.call_tool(step["name"], step.get("arguments") or {})
                        result = wire.last_result("tools/call", start) or dump(r)
                    elif op == "call_tool_with_progress":
                        method = "tools/call"
                        seen = 0

                        async def on_progress(_p: float, _t: float | None, _m: str | None) -> None:
                            nonlocal seen
                            seen += 1

                        r = await client.call_tool(
                            step["name"], step.get("arguments") or {}, progress_callback=on_progress
                        )
                        tokens = {
                            json.dumps(s["params"]["_meta"]["progressToken"])
                            for s in wire.sent.values()
                            if s["seq"] >= sent_start
                            and s["method"] == "tools/call"
                            and isinstance(s.get("params"), dict)
                            and "progressToken" in (s["params"].get("_meta") or {})
                        }
                        progress = [
                            m["params"]
                            for m in wire.received[start:]
                            if isinstance(m, dict)
                            and m.get("method") == "notifications/progress"
                            and json.dumps((m.get("params") or {}).get("progressToken")) in tokens
                        ]
                        if len(progress) != seen:
                            log(f"note: progress callback fired {seen}x, wire had {len(progress)}")
                        result = {"result": wire.last_result("tools/call", start) or dump(r), "progress": progress}
                    elif op == "call_tool_connecting":
                        # Session era: -32042 (URLElicitationRequiredError) names connect links;
                        # each is opened, its notifications/elicitation/complete awaited, and
                        # the call made again.
                        method = "tools/call"
                        secret = (plan.get("connect") or {}).get("secret")
                        try:
                            r = await client.call_tool(step["name"], step.get("arguments") or {})
                            result = {"result": wire.last_result("tools/call", start) or dump(r)}
                        except MCPError as e:
                            if e.error.code != -32042:
                                raise
                            asked = (e.error.data or {}).get("elicitations", [])
                            for el in asked:
                                await open_connect_page(el["url"], el.get("message", ""), secret)
                            ids = {el.get("elicitationId") for el in asked}
                            deadline = anyio.current_time() + 10.0
                            while True:
                                done = {
                                    p.get("elicitationId")
                                    for p in notifications_since(wire, start, "notifications/elicitation/complete")
                                }
                                if ids <= done or anyio.current_time() >= deadline:
                                    break
                                await anyio.sleep(0.02)
                            again = len(wire.received)
                            r = await client.call_tool(step["name"], step.get("arguments") or {})
                            result = {
                                "result": wire.last_result("tools/call", again) or dump(r),
                                "elicitations": asked,
                                "completed": sorted(i for i in done & ids if i),
                            }
                    elif op == "get_prompt":
                        method = "prompts/get"
                        r = await client.get_prompt(step["name"], step.get("arguments"))
                        result = raw_or(wire, method, start, r)
                    elif op == "read_resource":
                        method = "resources/read"
                        r = await client.read_resource(step["uri"])
                        result = raw_or(wire, method, start, r)
                    elif op in ("subscribe_resource", "unsubscribe_resource"):
                        method = "resources/subscribe" if op == "subscribe_resource" else "resources/unsubscribe"
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")  # deprecated as of 2026-07-28
                            r = await getattr(client, op)(step["uri"])
                        result = raw_or(wire, method, start, r)
                    elif op == "complete":
                        method = "completion/complete"
                        ref = step["ref"]
                        if ref.get("type") == "ref/prompt":
                            ref_model: Any = types.PromptReference(type="ref/prompt", name=ref["name"])
                        else:
                            ref_model = types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
                        context = (step.get("context") or {}).get("arguments")
                        r = await client.complete(ref_model, step["argument"], context_arguments=context)
                        result = raw_or(wire, method, start, r)
                    elif op == "set_logging_level":
                        method = "logging/setLevel"
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")  # deprecated as of 2026-07-28
                            r = await client.set_logging_level(step["level"])
                        result = raw_or(wire, method, start, r)
                    elif op == "wait_notifications":
                        since = step.get("since", 0)
                        if not isinstance(since, int) or isinstance(since, bool) or not 0 <= since <= i:
                            raise ValueError(f"wait_notifications: bad since {since!r}")
                        want = step.get("count", 1)
                        deadline = anyio.current_time() + float(step.get("timeoutMs", 10000)) / 1000.0
                        log(f"step {i}: waiting for {want} {step.get('method')}")  # every earlier step is done

                        while True:
                            seen_params = notifications_since(wire, marks[since], step.get("method"))
                            if len(seen_params) >= want or anyio.current_time() >= deadline:
                                break
                            await anyio.sleep(0.02)
                        result = seen_params
                    elif op == "ping":
                        method = "ping"
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            await session.send_ping()
                        result = {}
                    else:
                        raise ValueError(f"unknown plan op {op!r}")
                    out["results"].append(result)
                except Exception as e:  # noqa: BLE001
                    rec = error_record(e, wire, method, start)
                    log(f"step {i} ({op}) failed: {rec['message']}")
                    out["results"].append({"error": rec})
                    out["errors"].append({"step": i, "op": op, **rec})
        finally:
            try:
                await client.__aexit__(None, None, None)
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                log(f"close failed (ignored): {leaf_exception(e)!r}")
    wire.close()
    print(json.dumps(out, ensure_ascii=False), flush=True)
    return code


def main() -> None:
    if len(sys.argv) != 3:
        usage("expected exactly 2 arguments")
    url, plan_text = sys.argv[1], sys.argv[2]
    try:
        plan = json.loads(plan_text)
    except ValueError as e:
        usage(f"plan is not JSON: {e}")
    if not isinstance(plan, dict) or not isinstance(plan.get("steps"), list):
        usage('plan must be {"steps":[...]}')
    sys.exit(anyio.run(run, url, plan))


if __name__ == "__main__":
    main()
