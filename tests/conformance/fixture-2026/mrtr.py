"""MRTR plumbing of the 2026-07-28 fixture (SEP-2322): interactive handlers, both eras.

An interactive handler returns either a final wire result or a `NeedInput` (the questions it
still needs answered). `run_interactive` drives it: at 2026-07-28 a `NeedInput` becomes an
`InputRequiredResult` (the client retries with `inputResponses` and the echoed `requestState`);
on a legacy (initialize) session the same questions go over the back-channel on the call's own
stream. Either way a question needing a capability the client did not declare is -32021.

Also the small wire helpers the tools share (`text`, `elicit`, `sample`, `ROOTS`).
Not here: the tools themselves (server.py, task_tools.py) and the sealing of `requestState`
(the SDK's RequestStateBoundary middleware, installed in server.py).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

Ctx = ServerRequestContext[Any, Any]


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}]}


@dataclass
class NeedInput:
    """What an interactive handler returns while it still needs answers from the client.

    `requests` maps the server-chosen key to the embedded request ({"method", "params"});
    `state` is the plaintext requestState (the SDK's RequestStateBoundary seals it on the way
    out and unseals and verifies the echo on the way in, so handlers only see plaintext).
    """

    requests: dict[str, dict[str, Any]]
    state: str | None = None


# handler(ctx, arguments, responses, state) -> wire result dict | NeedInput
Interactive = Callable[[Ctx, dict[str, Any], dict[str, Any], "str | None"], Awaitable["dict[str, Any] | NeedInput"]]

CAPABILITY_FOR = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
LEGACY_MODELS: dict[str, tuple[Any, Any]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}
LEGACY_MAX_ROUNDS = 8


def elicit(message: str, prop: str, typ: str = "string") -> dict[str, Any]:
    schema = {"type": "object", "properties": {prop: {"type": typ}}, "required": [prop]}
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


def sample(prompt: str, max_tokens: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": {"type": "text", "text": prompt}}]
    return {"method": "sampling/createMessage", "params": {"messages": messages, "maxTokens": max_tokens}}


ROOTS = {"method": "roots/list", "params": {}}


def sampled_text(res: dict[str, Any]) -> str:
    c = res.get("content")
    c = c[0] if isinstance(c, list) and c else c
    return c.get("text", json.dumps(c)) if isinstance(c, dict) else json.dumps(c)


def answered(res: dict[str, Any]) -> str:
    return f"action={res.get('action')}, content={json.dumps(res.get('content') or {})}"


def root_uris(res: dict[str, Any]) -> str:
    return ", ".join(r.get("uri", "?") for r in res.get("roots", [])) or "(none)"


def require_capabilities(ctx: Ctx, requests: dict[str, dict[str, Any]]) -> None:
    """-32021 (HTTP 400) when a question needs a capability the client did not declare.

    A 2026-07-28 server MUST NOT rely on undeclared client capabilities; the error data names
    the missing ones as a ClientCapabilities object ({"sampling": {}}), as server-stateless
    checks.
    """
    caps = ctx.session.client_capabilities
    declared = caps.model_dump(exclude_none=True) if caps is not None else {}
    missing = {CAPABILITY_FOR[r["method"]] for r in requests.values()} - set(declared)
    if missing:
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Missing required client capability: {', '.join(sorted(missing))}",
            data={"requiredCapabilities": {m: {} for m in sorted(missing)}},
        )


async def run_interactive(ctx: Ctx, handler: Interactive, arguments: dict[str, Any]) -> dict[str, Any]:
    """Drive an interactive handler in whichever era the request came in."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        # Raw params (not the parsed model): the answers stay exactly as the client sent them.
        # The SDK has already rejected malformed ones (e.g. a number) with -32602.
        params = ctx.params or {}
        out = await handler(ctx, arguments, dict(params.get("inputResponses") or {}), params.get("requestState"))
        if not isinstance(out, NeedInput):
            return out
        require_capabilities(ctx, out.requests)
        result: dict[str, Any] = {"resultType": "input_required", "inputRequests": out.requests}
        if out.state is not None:
            result["requestState"] = out.state
        return result
    # Legacy (initialize) session: same handler, questions asked over the back-channel on the
    # call's own stream, state kept in memory between rounds. (The capability check stays:
    # asking a client for what it did not declare is wrong in either era.)
    responses: dict[str, Any] = {}
    state: str | None = None
    for _ in range(LEGACY_MAX_ROUNDS):
        out = await handler(ctx, arguments, responses, state)
        if not isinstance(out, NeedInput):
            return out
        require_capabilities(ctx, out.requests)
        responses, state = {}, out.state
        for key, req in out.requests.items():
            request_model, result_model = LEGACY_MODELS[req["method"]]
            res = await ctx.session.send_request(
                request_model.model_validate(req),
                result_model,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
            responses[key] = res.model_dump(by_alias=True, mode="json", exclude_none=True)
    raise MCPError(code=types.INTERNAL_ERROR, message="too many input rounds")
