"""Conformance fixture for the stateless MCP revision 2026-07-28, on the official Python SDK.

An upstream MCP server (Streamable HTTP, lowlevel `mcp.server.Server` of `mcp` 2.3.0) that
speaks 2026-07-28 natively: every request carries its own `_meta` envelope, `server/discover`
replaces `initialize`, results carry `resultType`, `ttlMs`/`cacheScope` and the
`serverInfo` `_meta` stamp, server->client questions are InputRequiredResult (MRTR, SEP-2322)
with a sealed `requestState`, and list changes reach clients through `subscriptions/listen`.

It offers what the 2026-07-28 server scenarios of the conformance suite 0.2.0-alpha.12
(npm alias `conformance-alpha`) hard-code, so it can be tested directly and then used as the
upstream of a gateway:
  - tools-*, prompts-*, resources-*, completion-complete, json-schema-2020-12, caching,
    sep-2164-resource-not-found, dns-rebinding-protection, server-sse-multiple-streams;
  - server-stateless (test_missing_capability, test_streaming_elicitation, test_logging_tool,
    test_trigger_tool_change / test_trigger_prompt_change, subscriptions/listen);
  - http-header-validation and http-custom-header-server-validation (test_custom_headers,
    whose parameters carry `x-mcp-header`; the SDK validates Mcp-Name / Mcp-Param-*);
  - input-required-result-* (the test_input_required_result_* tools and prompt; the
    inputRequests keys are the ones the scenarios document, see MRTR TOOLS below);
  - the ten tasks-* scenarios of the io.modelcontextprotocol/tasks extension (SEP-2663), which
    the SDK does not implement: tasks_ext.py (task store, tasks/get|update|cancel, listen
    taskIds, -32021 and Mcp-Name checks) and task_tools.py (greet, slow_compute, ...).
Plus test_passthrough, whose definition and result carry members no schema knows, to check
that a gateway passes unknown fields through, and test_trigger_resource_update, which sends
notifications/resources/updated to listen streams subscribed to test://watched-resource.

The SDK routes by the MCP-Protocol-Version header: 2026-07-28 (or anything that is not a
handshake version) goes to its stateless single-exchange entry; no header or a 2025 version
goes to the ordinary stateful transport, so a legacy client can still `initialize` here. On
that legacy path the MRTR tools ask their questions as ordinary server->client requests; the
legacy-only features (logging/setLevel, resources/subscribe, the 0.1.16 sampling/elicitation
tools) are not offered, tests/conformance/fixture/server.ts covers those. Tasks are 2026-07-28
only: on the legacy path task tools run inline or answer -32021, and tasks/* answer -32601.

Modules next to this one (imported by name: the script's directory is on sys.path): mrtr.py
(MRTR plumbing for both eras), tasks_ext.py and task_tools.py (the Tasks extension).
Not here: tasks_selfcheck.py, a client-side check of what the tasks-* scenarios leave out.

Run (prints one line on stdout once it accepts connections; logs go to stderr):
  PORT=0 .peers/py-client/bin/python tests/conformance/fixture-2026/server.py
  -> conformance-fixture-2026: listening on http://127.0.0.1:<port>/mcp
Test it directly (tests/conformance/run fixture-2026 does all of this):
  . .peers/env.sh && "$MANIFOLD_NODE" "$MANIFOLD_NODE_MODULES/conformance-alpha/dist/index.js" \
      server --url http://127.0.0.1:<port>/mcp --suite all --spec-version 2026-07-28 -o /tmp/out
  and each tasks-* scenario by itself, without --spec-version (extension scenarios are not on
  the spec timeline): ... server --url ... --scenario tasks-lifecycle -o /tmp/out
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import uvicorn

import tasks_ext
from mcp.server import CacheHint, Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mrtr import (
    ROOTS,
    Ctx,
    Interactive,
    NeedInput,
    answered,
    elicit,
    root_uris,
    run_interactive,
    sample,
    sampled_text,
    text,
)
from task_tools import TASK_TOOLS

# Logging is deprecated at 2026-07-28 (SEP-2577) but server-stateless still probes it; the
# per-call DeprecationWarning would only clutter stderr.
warnings.simplefilter("ignore", MCPDeprecationWarning)

NAME = "manifold-conformance-fixture-2026"

# ------------------------------------------------------------------ fixed test data
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
# 44-byte WAV header + 2 samples of silence (8 kHz, mono, 16-bit); same bytes as the TS fixture.
WAV_TINY = "UklGRigAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQQAAAAAAAAA"
COMPLETIONS = ["paris", "park", "party", "test", "testValue1", "testing"]
TEMPLATE_URI = "test://template/{id}/data"
TEMPLATE_RE = re.compile(r"^test://template/([^/]+)/data$")

# json-schema-2020-12 checks that these keywords survive tools/list verbatim (SEP-2106 adds
# $anchor, allOf/anyOf and if/then/else). Tool.inputSchema is a plain dict in the SDK, so
# nothing is stripped.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
# SEP-2243: the client mirrors these parameters into Mcp-Param-* headers and the SDK's
# stateless entry checks them against the body before dispatch (400 / -32020 on mismatch).
CUSTOM_HEADERS_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "Mirrored as Mcp-Param-Region", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "description": "Mirrored as Mcp-Param-Priority", "x-mcp-header": "Priority"},
        "query": {"type": "string", "description": "Not mirrored (no x-mcp-header)"},
    },
    "required": ["region", "priority", "query"],
}
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

# Members no MCP schema defines. The SDK's outbound sieve validates every spec result against
# the revision's model with extra="ignore", so a handler cannot emit them (only `_meta` and
# the free-form inputSchema/outputSchema/structuredContent survive); restore_unknown_members
# puts them back after the sieve.
PASSTHROUGH = "test_passthrough"
PASSTHROUGH_TOOL_EXTRA = {"x-vendor": {"tier": "gold", "flags": [1, 2]}}
PASSTHROUGH_RESULT_EXTRA = {"x-vendor-result": {"trace": "abc123"}}


def user_text(t: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": t}}


# ------------------------------------------------------------------ MRTR TOOLS (SEP-2322)
# inputRequests keys per tool (as the alpha's scenario descriptions spell them):
#   test_input_required_result_elicitation     user_name
#   test_input_required_result_sampling        capital_question
#   test_input_required_result_list_roots      client_roots
#   test_input_required_result_request_state   confirm            (+ requestState)
#   test_input_required_result_multiple_inputs user_name, greeting, client_roots (+ requestState)
#   test_input_required_result_multi_round     step1, then step2  (+ a new requestState per round)
#   test_input_required_result_tampered_state  confirm            (+ requestState)
#   test_input_required_result_capabilities    sampling_hello / elicitation_name (declared only)
#   test_input_required_result_prompt (prompt) user_context
#   test_missing_capability                    capital_question   (-32021 without sampling)
#   test_streaming_elicitation                 confirm
# A retry without the expected key simply gets the question again (missing-input-response);
# unknown extra keys are ignored (ignore-extra-params).
async def ir_elicitation(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    if "user_name" not in resp:
        return NeedInput({"user_name": elicit("What is your name?", "name")})
    r = resp["user_name"]
    if r.get("action") != "accept":
        return text(f"No name given ({r.get('action')})")
    return text(f"Hello, {(r.get('content') or {}).get('name')}!")


async def ir_sampling(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    if "capital_question" not in resp:
        return NeedInput({"capital_question": sample("What is the capital of France?", 100)})
    return text(f"LLM response: {sampled_text(resp['capital_question'])}")


async def ir_list_roots(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    if "client_roots" not in resp:
        return NeedInput({"client_roots": ROOTS})
    return text(f"Roots: {root_uris(resp['client_roots'])}")


def confirm_flow(label: str, done: Callable[[dict], str]) -> Interactive:
    """One elicitation whose answer only counts together with the state minted for it."""

    async def handler(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
        expected = f"{label}:awaiting-confirm"
        if "confirm" in resp and state == expected:
            return text(done(resp["confirm"]))
        return NeedInput({"confirm": elicit("Please confirm", "ok", "boolean")}, expected)

    return handler


async def ir_multiple(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    keys = ("user_name", "greeting", "client_roots")
    if not all(k in resp for k in keys):
        return NeedInput(
            {
                "user_name": elicit("What is your name?", "name"),
                "greeting": sample("Generate a greeting", 50),
                "client_roots": ROOTS,
            },
            "multiple-inputs:awaiting-all",
        )
    return text(
        f"name: {answered(resp['user_name'])}; greeting: {sampled_text(resp['greeting'])}; "
        f"roots: {root_uris(resp['client_roots'])}"
    )


async def ir_multi_round(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    # The state carries what earlier rounds learned, so each round's token differs.
    prior = json.loads(state) if state else {"round": 1}
    if prior.get("round") == 2 and "step2" in resp:
        color = (resp["step2"].get("content") or {}).get("color")
        return text(f"step1: name={prior.get('name')}; step2: color={color}")
    if prior.get("round") == 1 and "step1" in resp:
        name = (resp["step1"].get("content") or {}).get("name")
        return NeedInput(
            {"step2": elicit("Step 2: What is your favorite color?", "color")},
            json.dumps({"round": 2, "name": name}),
        )
    if prior.get("round") == 2:  # round-2 answer missing: ask again, same state
        return NeedInput({"step2": elicit("Step 2: What is your favorite color?", "color")}, state)
    return NeedInput({"step1": elicit("Step 1: What is your name?", "name")}, json.dumps({"round": 1}))


async def ir_capabilities(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    # Reads the request's own _meta clientCapabilities (the SDK puts them on the connection).
    caps = ctx.session.client_capabilities
    asks: dict[str, dict[str, Any]] = {}
    if caps is not None and caps.sampling is not None:
        asks["sampling_hello"] = sample("Say hello", 20)
    if caps is not None and caps.elicitation is not None:
        asks["elicitation_name"] = elicit("Your name?", "name")
    if not asks:
        return text("the client declared neither sampling nor elicitation")
    if not any(k in resp for k in asks):
        return NeedInput(asks)
    parts = []
    if "sampling_hello" in resp:
        parts.append(f"sampling: {sampled_text(resp['sampling_hello'])}")
    if "elicitation_name" in resp:
        parts.append(f"elicitation: {answered(resp['elicitation_name'])}")
    return text("; ".join(parts))


async def missing_capability(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    # Always needs sampling; require_capabilities turns that into -32021 for a client without it.
    if "capital_question" not in resp:
        return NeedInput({"capital_question": sample("Say hello", 20)})
    return text(f"LLM response: {sampled_text(resp['capital_question'])}")


async def streaming_elicitation(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    if "confirm" in resp:
        return text(f"Streaming elicitation completed: {answered(resp['confirm'])}")
    # With a progressToken the response commits to SSE here; even then the question must come
    # as an InputRequiredResult, never as a JSON-RPC request on the stream (server-stateless).
    await ctx.session.report_progress(0, 1, "asking")
    return NeedInput({"confirm": elicit("Please confirm to continue", "confirm", "boolean")})


async def ir_prompt(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    if "user_context" not in resp:
        return NeedInput({"user_context": elicit("What context should the prompt use?", "context")})
    r = resp["user_context"]
    accepted = r.get("action") == "accept"
    context = (r.get("content") or {}).get("context", "") if accepted else f"({r.get('action')})"
    return {"messages": [user_text(f"Prompt with context: {context}")]}


# ------------------------------------------------------------------ tools
@dataclass
class ToolDef:
    description: str
    handler: Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]
    input_schema: dict[str, Any] = field(default_factory=lambda: NO_ARGS)
    extra: dict[str, Any] = field(default_factory=dict)  # more wire members (_meta, outputSchema)


def interactive(handler: Interactive) -> Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]:
    return lambda ctx, args: run_interactive(ctx, handler, args)


def constant(result: dict[str, Any]) -> Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]:
    async def handler(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        return result

    return handler


async def with_progress(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    # report_progress is a no-op without a progressToken in the request's _meta.
    for progress in (0, 50, 100):
        await ctx.session.report_progress(progress, 100, f"{progress}%")
        if progress < 100:
            await anyio.sleep(0.05)
    return text("Tool with progress executed successfully")


async def with_logging(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    # At 2026-07-28 the SDK drops these unless this request's _meta set
    # io.modelcontextprotocol/logLevel (server-stateless checks that nothing leaks).
    for data in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.session.send_log_message("info", data, logger=NAME, related_request_id=ctx.request_id)
        await anyio.sleep(0.02)
    return text("Tool with logging executed successfully")


async def echo_args(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return text(f"Received: {json.dumps(args, sort_keys=True)}")


async def passthrough(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    return {**text("passthrough"), "structuredContent": {"echo": args, "ok": True}}


# Set by the trigger tools; listed state of the two dynamic entries.
DYNAMIC = {"tool": False, "prompt": False}
WATCHED = {"version": 0}  # bumped by test_trigger_resource_update
BUS = InMemorySubscriptionBus()
# The SDK's ListenHandler, plus notifications.taskIds (notifications/tasks) for the extension.
LISTEN = tasks_ext.TasksListen(BUS, tasks_ext.STORE)


def toggle(kind: str, event: Any) -> Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]:
    async def handler(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
        DYNAMIC[kind] = not DYNAMIC[kind]
        await BUS.publish(event)  # fans out to every open subscriptions/listen stream that asked
        return text(f"test_dynamic_{kind} is now {'listed' if DYNAMIC[kind] else 'unlisted'}")

    return handler


async def resource_update(ctx: Ctx, args: dict[str, Any]) -> dict[str, Any]:
    WATCHED["version"] += 1  # a real change behind the notification
    await BUS.publish(ResourceUpdated("test://watched-resource"))
    return text("test://watched-resource updated")


IMAGE = {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}
EMBEDDED = {
    "type": "resource",
    "resource": {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    },
}
MIXED_JSON = {
    "uri": "test://mixed-content-resource",
    "mimeType": "application/json",
    "text": '{"test": "data", "value": 123}',
}
PASSTHROUGH_OUTPUT = {
    "type": "object",
    "properties": {"echo": {"type": "object"}, "ok": {"type": "boolean"}},
    "required": ["ok"],
}

TOOLS: dict[str, ToolDef] = {
    # First on purpose: http-header-validation calls tools[0] with no arguments.
    "test_simple_text": ToolDef(
        "Returns simple text content", constant(text("This is a simple text response for testing."))
    ),
    "test_image_content": ToolDef("Returns image content", constant({"content": [IMAGE]})),
    "test_audio_content": ToolDef(
        "Returns audio content",
        constant({"content": [{"type": "audio", "data": WAV_TINY, "mimeType": "audio/wav"}]}),
    ),
    "test_embedded_resource": ToolDef("Returns an embedded resource", constant({"content": [EMBEDDED]})),
    "test_multiple_content_types": ToolDef(
        "Returns text, image and resource content",
        constant(
            {
                "content": [
                    {"type": "text", "text": "Multiple content types test:"},
                    IMAGE,
                    {"type": "resource", "resource": MIXED_JSON},
                ]
            }
        ),
    ),
    "test_error_handling": ToolDef(
        "Always fails",
        constant({"isError": True, **text("This tool intentionally returns an error for testing")}),
    ),
    "test_tool_with_progress": ToolDef("Reports progress 0, 50, 100 of 100", with_progress),
    "test_tool_with_logging": ToolDef("Logs three info messages (2026-07-28: only with _meta logLevel)", with_logging),
    "test_logging_tool": ToolDef("Logs while it runs (server-stateless: nothing without _meta logLevel)", with_logging),
    "json_schema_2020_12_tool": ToolDef("Tool with JSON Schema 2020-12 features", echo_args, JSON_SCHEMA_2020_12),
    "test_custom_headers": ToolDef(
        "Parameters annotated with x-mcp-header (SEP-2243); echoes its arguments", echo_args, CUSTOM_HEADERS_SCHEMA
    ),
    PASSTHROUGH: ToolDef(
        "Definition and result carry _meta and members no schema defines (gateway passthrough check)",
        passthrough,
        {"type": "object", "properties": {"value": {"type": "string"}}},
        {"_meta": {"example.com/k": 1}, "outputSchema": PASSTHROUGH_OUTPUT},
    ),
    "test_missing_capability": ToolDef(
        "Needs sampling; a client that did not declare it gets -32021", interactive(missing_capability)
    ),
    "test_streaming_elicitation": ToolDef(
        "Reports progress (given a token), then asks for a confirmation", interactive(streaming_elicitation)
    ),
    "test_trigger_tool_change": ToolDef(
        "Toggles test_dynamic_tool (tools/list_changed on listen streams)", toggle("tool", ToolsListChanged())
    ),
    "test_trigger_prompt_change": ToolDef(
        "Toggles test_dynamic_prompt (prompts/list_changed on listen streams)", toggle("prompt", PromptsListChanged())
    ),
    "test_trigger_resource_update": ToolDef(
        "Publishes resources/updated for test://watched-resource on listen streams", resource_update
    ),
    "test_dynamic_tool": ToolDef(
        "Listed only every other time test_trigger_tool_change is called", constant(text("dynamic tool"))
    ),
    "test_input_required_result_elicitation": ToolDef(
        "Asks for the user's name (key user_name), then greets", interactive(ir_elicitation)
    ),
    "test_input_required_result_sampling": ToolDef(
        "Asks the client to sample (key capital_question)", interactive(ir_sampling)
    ),
    "test_input_required_result_list_roots": ToolDef(
        "Asks for the client's roots (key client_roots)", interactive(ir_list_roots)
    ),
    "test_input_required_result_request_state": ToolDef(
        "Asks for a confirmation (key confirm) with requestState; says state-ok once both come back",
        interactive(confirm_flow("request-state", lambda r: f"state-ok: {answered(r)}")),
    ),
    "test_input_required_result_multiple_inputs": ToolDef(
        "Asks elicitation, sampling and roots/list at once", interactive(ir_multiple)
    ),
    "test_input_required_result_multi_round": ToolDef(
        "Two elicitation rounds (step1, step2), a new requestState each", interactive(ir_multi_round)
    ),
    "test_input_required_result_tampered_state": ToolDef(
        "Asks for a confirmation with a sealed requestState; a tampered one gets -32602",
        interactive(confirm_flow("tampered-state", lambda r: f"confirmed: {answered(r)}")),
    ),
    "test_input_required_result_capabilities": ToolDef(
        "Asks only for what the request's _meta declares (sampling, elicitation)", interactive(ir_capabilities)
    ),
    # The tasks-* scenarios' tools (task_tools.py), after the others: tools[0] stays test_simple_text.
    **{name: ToolDef(t.description, t.handler, t.input_schema) for name, t in TASK_TOOLS.items()},
}


def listed_tools() -> list[str]:
    return [n for n in TOOLS if n != "test_dynamic_tool" or DYNAMIC["tool"]]


def tool_wire(name: str) -> dict[str, Any]:
    t = TOOLS[name]
    return {"name": name, "description": t.description, "inputSchema": t.input_schema, **t.extra}


async def list_tools(ctx: Ctx, params: Any) -> dict[str, Any]:
    return {"tools": [tool_wire(n) for n in listed_tools()]}


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> dict[str, Any]:
    if params.name not in listed_tools():
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    return await TOOLS[params.name].handler(ctx, params.arguments or {})


def tool_input_schema(name: str) -> dict[str, Any] | None:
    # Lets the SDK validate Mcp-Param-* headers without running tools/list per call.
    return TOOLS[name].input_schema if name in TOOLS else None


# ------------------------------------------------------------------ prompts
PROMPTS: dict[str, dict[str, Any]] = {
    "test_simple_prompt": {"description": "A simple prompt without arguments"},
    "test_prompt_with_arguments": {
        "description": "A prompt with two required arguments",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    },
    "test_prompt_with_embedded_resource": {
        "description": "A prompt that embeds a resource",
        "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
    },
    "test_prompt_with_image": {"description": "A prompt with image content"},
    "test_input_required_result_prompt": {"description": "Asks for context (key user_context), then builds the prompt"},
    "test_dynamic_prompt": {"description": "Listed only every other time test_trigger_prompt_change is called"},
}


def listed_prompts() -> list[str]:
    return [n for n in PROMPTS if n != "test_dynamic_prompt" or DYNAMIC["prompt"]]


async def list_prompts(ctx: Ctx, params: Any) -> dict[str, Any]:
    return {"prompts": [{"name": n, **PROMPTS[n]} for n in listed_prompts()]}


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> dict[str, Any]:
    name, args = params.name, params.arguments or {}
    if name not in listed_prompts():
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
    missing = [a["name"] for a in PROMPTS[name].get("arguments", []) if a.get("required") and a["name"] not in args]
    if missing:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Missing required arguments: {', '.join(missing)}")
    if name == "test_input_required_result_prompt":
        return await run_interactive(ctx, ir_prompt, args)
    if name == "test_prompt_with_arguments":
        return {"messages": [user_text(f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'")]}
    if name == "test_prompt_with_embedded_resource":
        body = {"uri": args["resourceUri"], "mimeType": "text/plain", "text": "Embedded resource content for testing."}
        embedded = {"role": "user", "content": {"type": "resource", "resource": body}}
        return {"messages": [embedded, user_text("Please process the embedded resource above.")]}
    if name == "test_prompt_with_image":
        image = {"role": "user", "content": {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}}
        return {"messages": [image, user_text("Please analyze the image above.")]}
    if name == "test_dynamic_prompt":
        return {"messages": [user_text("dynamic prompt")]}
    return {"messages": [user_text("This is a simple prompt for testing.")]}


# ------------------------------------------------------------------ resources
def resource(name: str, description: str, mime_type: str) -> dict[str, Any]:
    return {"uri": f"test://{name}", "name": name, "description": description, "mimeType": mime_type}


RESOURCES = [
    resource("static-text", "A static text resource", "text/plain"),
    resource("static-binary", "A static binary resource (1x1 PNG)", "image/png"),
    resource("watched-resource", "Updated by test_trigger_resource_update", "text/plain"),
]
TEMPLATE = {
    "uriTemplate": TEMPLATE_URI,
    "name": "template-data",
    "description": "A resource template with an id parameter",
    "mimeType": "application/json",
}


async def list_resources(ctx: Ctx, params: Any) -> dict[str, Any]:
    return {"resources": RESOURCES}


async def list_resource_templates(ctx: Ctx, params: Any) -> dict[str, Any]:
    return {"resourceTemplates": [TEMPLATE]}


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> dict[str, Any]:
    uri = params.uri
    if uri == "test://static-text":
        body = "This is the content of the static text resource."
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": body}]}
    if uri == "test://static-binary":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG_1X1}]}
    if uri == "test://watched-resource":
        body = f"Watched resource content, version {WATCHED['version']}"
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": body}]}
    if m := TEMPLATE_RE.match(uri):
        data = {"id": m.group(1), "templateTest": True, "data": f"Data for ID: {m.group(1)}"}
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": json.dumps(data)}]}
    # SEP-2164: -32602 with the URI in data, never an empty contents array.
    raise MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})


# ------------------------------------------------------------------ completion
async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> dict[str, Any]:
    ref, arg = params.ref, params.argument
    values: list[str] = []
    if isinstance(ref, types.PromptReference) and ref.name == "test_prompt_with_arguments" and arg.name == "arg1":
        values = [c for c in COMPLETIONS if c.startswith(arg.value)]
    elif isinstance(ref, types.ResourceTemplateReference) and ref.uri == TEMPLATE_URI and arg.name == "id":
        values = [v for v in ("1", "42", "123") if v.startswith(arg.value)]
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


# ------------------------------------------------------------------ server assembly
async def restore_unknown_members(ctx: Ctx, call_next: Any) -> Any:
    """Re-add test_passthrough's unknown members after the SDK's per-revision sieve.

    Middleware runs outside the runner's serialisation step, so what it adds reaches the wire
    as is (the sieve has already run). Only the complete tools/call result gets them.
    """
    result = await call_next(ctx)
    if not isinstance(result, dict):
        return result
    if ctx.method == "tools/list":
        for tool in result.get("tools", []):
            if tool.get("name") == PASSTHROUGH:
                tool.update(PASSTHROUGH_TOOL_EXTRA)
    elif ctx.method == "tools/call" and (ctx.params or {}).get("name") == PASSTHROUGH and "content" in result:
        result.update(PASSTHROUGH_RESULT_EXTRA)
    return result


def wire(handler: Callable[[Ctx, Any], Awaitable[dict[str, Any]]]) -> Callable[[Ctx, Any], Awaitable[dict[str, Any]]]:
    """Handlers return wire dicts; at 2026-07-28 the SDK's sieve requires `resultType` on
    them (typed result models default it, dicts do not). The legacy sieve drops it again."""

    async def wrapped(ctx: Ctx, params: Any) -> dict[str, Any]:
        return {"resultType": "complete", **await handler(ctx, params)}  # input_required wins

    return wrapped


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        NAME,
        version="1.0.0",
        instructions="Conformance fixture for MCP 2026-07-28 (Manifold tests/conformance/fixture-2026).",
        # SEP-2549: ttlMs/cacheScope on every cacheable result; lists that the trigger tools
        # mutate are short-lived and private, static data is public.
        cache_hints={
            "tools/list": CacheHint(ttl_ms=1000, scope="private"),
            "prompts/list": CacheHint(ttl_ms=1000, scope="private"),
            "resources/list": CacheHint(ttl_ms=60000, scope="public"),
            "resources/templates/list": CacheHint(ttl_ms=60000, scope="public"),
            "resources/read": CacheHint(ttl_ms=30000, scope="public"),
        },
        get_tool_input_schema=tool_input_schema,
        on_list_tools=wire(list_tools),
        on_call_tool=wire(call_tool),
        on_list_prompts=wire(list_prompts),
        on_get_prompt=wire(get_prompt),
        on_list_resources=wire(list_resources),
        on_list_resource_templates=wire(list_resource_templates),
        on_read_resource=wire(read_resource),
        on_completion=wire(complete),
        # Serving subscriptions/listen is what makes discover advertise listChanged/subscribe.
        on_subscriptions_listen=LISTEN,
        # Runs the jobs of the io.modelcontextprotocol/tasks extension for the server's lifetime.
        lifespan=tasks_ext.lifespan,
    )
    # io.modelcontextprotocol/tasks: advertised in server/discover; tasks/get, update, cancel.
    tasks_ext.install(server)
    # The lowlevel Server does not seal requestState by itself (MCPServer does). An
    # in-process key: state minted before a restart is rejected, which suits a test fixture.
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=NAME))
    server.middleware.append(restore_unknown_members)
    return server


class FixtureServer(uvicorn.Server):
    """Prints the ready line once uvicorn's listener is up; ends listen streams on shutdown."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and sockets:
            port = sockets[0].getsockname()[1]
            print(f"conformance-fixture-2026: listening on http://127.0.0.1:{port}/mcp", flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # An open subscriptions/listen stream never ends by itself, and uvicorn waits for open
        # connections: close them gracefully (each sends its final SubscriptionsListenResult).
        LISTEN.close()
        await super().shutdown(sockets=sockets)


def main() -> None:
    port = int(os.environ.get("PORT") or 0)
    # host="127.0.0.1" also turns on the SDK's Host/Origin checks (DNS-rebinding protection).
    # SSE responses (json_response=False), so progress can stream and listen streams work.
    app = build_server().streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))  # bound here so PORT=0 picks a free port we can report
    # access_log off: stdout carries the ready line and nothing else. The graceful-shutdown
    # bound covers legacy sessions' standalone GET streams, which would also hold it open.
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2)
    FixtureServer(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
