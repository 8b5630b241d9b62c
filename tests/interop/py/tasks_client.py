"""Interop driver for the io.modelcontextprotocol/tasks extension: the official Python SDK
client (mcp 2.3.0, `mcp.Client` at 2026-07-28) with a small tasks `ClientExtension`, run
against a URL (Manifold, or a FastMCP server directly, for comparison).

Usage: python tests/interop/py/tasks_client.py <url>
Prints one JSON object on stdout:
    {"crunch": {"created": <the raw CreateTaskResult>, "final": <the completed tasks/get result>},
     "resolved": <the CallToolResult the extension's claim resolved transparently, as JSON>,
     "migrate_undeclared": {"code", "message"},   # a required-task tool without the extension
     "approve": {"asked": <inputRequests>, "ack": <tasks/update result>, "final": <tasks/get>},
     "cancel": {"ack": <tasks/cancel result>, "final": <tasks/get>},
     "plain": <the plain tool's CallToolResult>}
Exit status 0 when every step ran; 1 with the failure on stderr otherwise.
$MANIFOLD_BEARER, when set, is sent as `Authorization: Bearer <it>`.

The extension: `identifier = "io.modelcontextprotocol/tasks"` (advertised in every
request's clientCapabilities), a `ResultClaim` for `resultType: "task"` on tools/call whose
resolver polls tasks/get until the task ends; tasks/get, tasks/update and tasks/cancel are
`mcp_types.Request` subclasses with `name_param = "taskId"`, so the SDK sends the `Mcp-Name`
header SEP-2663 requires.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams, Result
from pydantic import ConfigDict, Field

EXT = "io.modelcontextprotocol/tasks"
POLL_S = 0.05
POLL_LIMIT_S = 20.0


class CreateTask(Result):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskView(Result):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str | None = Field(default=None, alias="taskId")
    status: str | None = None


class Ack(Result):
    model_config = ConfigDict(extra="allow")


class TaskIdParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(serialization_alias="taskId")


class UpdateParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(serialization_alias="taskId")
    input_responses: dict[str, Any] = Field(serialization_alias="inputResponses")


class GetTask(mcp_types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class UpdateTask(mcp_types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class CancelTask(mcp_types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def get(session: Any, task_id: str) -> dict[str, Any]:
    return dump(await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), TaskView))


async def until(session: Any, task_id: str, done: Any) -> dict[str, Any]:
    with anyio.fail_after(POLL_LIMIT_S):
        while True:
            view = await get(session, task_id)
            if done(view):
                return view
            await anyio.sleep(POLL_S)


def ended(view: dict[str, Any]) -> bool:
    return view.get("status") in ("completed", "failed", "cancelled")


async def resolve(created: CreateTask, ctx: ClaimContext) -> mcp_types.CallToolResult:
    final = await until(ctx.session, created.task_id, ended)
    if final.get("status") != "completed":
        raise RuntimeError(f"task ended {final.get('status')}: {final}")
    return mcp_types.CallToolResult.model_validate(final["result"])


class Tasks(ClientExtension):
    identifier = EXT

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTask, resolve=resolve)]


async def run(url: str) -> dict[str, Any]:
    bearer = os.environ.get("MANIFOLD_BEARER")
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {bearer}"} if bearer else None,
        timeout=httpx2.Timeout(30.0),
        trust_env=False,
    )
    out: dict[str, Any] = {}
    async with http:
        async with Client(
            streamable_http_client(url, http_client=http), mode="2026-07-28", extensions=[Tasks()]
        ) as client:
            session = client.session
            created = await session.call_tool("crunch", {"dataset": "d1"}, allow_claimed=True)
            out["crunch"] = {
                "created": dump(created),
                "final": await until(session, created.task_id, ended),
            }
            out["resolved"] = dump(await client.call_tool("crunch", {"dataset": "d2"}))
            async with Client(
                streamable_http_client(url, http_client=http), mode="2026-07-28"
            ) as bare:
                try:
                    await bare.call_tool("migrate", {})
                    out["migrate_undeclared"] = None
                except MCPError as e:
                    out["migrate_undeclared"] = {"code": e.error.code, "message": e.error.message}
            asked = await session.call_tool("approve", {"item": "x"}, allow_claimed=True)
            view = await until(session, asked.task_id, lambda v: v.get("status") != "working")
            key = next(iter(view.get("inputRequests") or {"none": None}))
            ack = await session.send_request(
                UpdateTask(
                    params=UpdateParams(
                        task_id=asked.task_id,
                        input_responses={key: {"action": "accept", "content": {"ok": True}}},
                    )
                ),
                Ack,
            )
            out["approve"] = {
                "asked": view.get("inputRequests"),
                "ack": dump(ack),
                "final": await until(session, asked.task_id, ended),
            }
            slow = await session.call_tool("crunch", {"dataset": "d3", "seconds": 30}, allow_claimed=True)
            ack = await session.send_request(CancelTask(params=TaskIdParams(task_id=slow.task_id)), Ack)
            out["cancel"] = {"ack": dump(ack), "final": await until(session, slow.task_id, ended)}
            out["plain"] = dump(await client.call_tool("plain", {"text": "hi"}))
    return out


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: tasks_client.py <url>", file=sys.stderr)
        sys.exit(2)
    try:
        out = anyio.run(run, sys.argv[1])
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, KeyboardInterrupt):
            raise
        print(f"tasks_client: {e!r}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
