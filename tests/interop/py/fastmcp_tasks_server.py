"""A FastMCP 4.x server with task-enabled tools (the io.modelcontextprotocol/tasks extension,
via fastmcp-tasks), for the interop test of tasks relayed through Manifold.

Usage: .peers/py-fastmcp/bin/python tests/interop/py/fastmcp_tasks_server.py
Listens on 127.0.0.1 (a free port) over Streamable HTTP and prints one line:
    fastmcp-tasks: listening on http://127.0.0.1:<port>/mcp
Tools:
    crunch {dataset, seconds?}  a task for requests that declare the extension (optional), else inline
    migrate {}                  runs only as a task (required): -32021 without the extension
    approve {item}              a task that asks the client for confirmation (an elicitation in its
                                inputRequests, answered with tasks/update) and echoes the answer
    plain {text}                never a task
Tasks live in fastmcp-tasks' in-memory Docket backend (memory://).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from datetime import timedelta
from typing import Any

import mcp_types

import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-tasks-interop")
mcp.add_extension(TasksExtension())


@mcp.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(milliseconds=100)))
async def crunch(dataset: str, seconds: float = 0.2) -> str:
    await asyncio.sleep(seconds)
    return f"crunched {dataset}"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100)))
async def migrate() -> str:
    return "migrated"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100)))
async def approve(item: str, ctx: Context) -> Any:
    # The guard pattern: ask by returning an InputRequiredResult; the task goes
    # input_required, and this runs again with the answer once tasks/update brings it.
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        ask = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=f"Approve {item}?",
                requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"confirm": ask})
    answer = answer if isinstance(answer, dict) else answer.model_dump(by_alias=True)
    return f"{item}: {answer.get('action')} {json.dumps(answer.get('content'), sort_keys=True)}"


@mcp.tool
def plain(text: str) -> str:
    return text


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = mcp.http_app(path="/mcp")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    asyncio.run(serve(server, sock, port))


async def serve(server: uvicorn.Server, sock: socket.socket, port: int) -> None:
    # The line goes out once the app has started (its lifespan starts the task backend),
    # so whoever waits for it can connect at once.
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.02)
    print(f"fastmcp-tasks: listening on http://127.0.0.1:{port}/mcp", flush=True)
    await task


if __name__ == "__main__":
    sys.exit(main())
