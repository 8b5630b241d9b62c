"""The tools of the conformance suite's `tasks-*` scenarios (io.modelcontextprotocol/tasks).

Fixed names and behaviour, as the 0.2.0 alpha's scenario descriptions list them ("Required
server fixtures"). "optional" tools become a task when the request declares the extension and
run inline otherwise; "required" ones answer -32021 to a request that does not declare it.
  greet {name}              sync only (never a task, whatever `task` param comes with it)
  slow_compute {seconds}    optional; sleeps, then completes (a tasks/cancel ends it at once)
  failing_job {}            required; a tool error after FAILING_JOB_DELAY: completed, isError
  protocol_error_job {}     optional; a JSON-RPC error (-32603): the task ends failed
  confirm_delete {filename} required; one elicitation through inputRequests, then completes
  multi_input {}            required; two elicitations at once (answerable one at a time)
  test_tool_with_task {}    required; one MRTR round (key user_name) before the task exists,
                            then a task whose result greets the name given in that round

Not here: the task store and the tasks/* methods (tasks_ext.py), MRTR plumbing (mrtr.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

import anyio
import mcp_types as types

from mcp.shared.exceptions import MCPError
from mrtr import Ctx, NeedInput, run_interactive, text
from tasks_ext import STORE, Job, TaskInput, require_tasks, task_tool

MAX_SLOW_SECONDS = 600  # slow_compute refuses longer sleeps (the scenarios ask for at most 60 s)
FAILING_JOB_DELAY = 1.0  # "returns a tool execution error after ~1s"
PROTOCOL_ERROR_DELAY = 0.5
GREETING_TASK_DELAY = 0.3  # test_tool_with_task: long enough to be observed as working


class TaskToolSpec(NamedTuple):
    description: str
    handler: Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]
    input_schema: dict[str, Any]


def schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def string_arg(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise MCPError(code=types.INVALID_PARAMS, message=f"argument {name!r} must be a string")
    return value


def form_question(message: str, requested: dict[str, Any]) -> dict[str, Any]:
    """An embedded elicitation/create request, as an inputRequests entry carries it."""
    params = {"mode": "form", "message": message, "requestedSchema": requested}
    return {"method": "elicitation/create", "params": params}


def confirm_question(message: str) -> dict[str, Any]:
    return form_question(message, schema({"confirm": {"type": "boolean", "description": "Go ahead?"}}, ["confirm"]))


def name_question(message: str) -> dict[str, Any]:
    return form_question(message, schema({"name": {"type": "string"}}, ["name"]))


def accepted(answer: dict[str, Any]) -> dict[str, Any] | None:
    """The content of an accepted elicitation answer, else None (declined or cancelled)."""
    content = answer.get("content")
    return content if answer.get("action") == "accept" and isinstance(content, dict) else None


# ------------------------------------------------------------------ jobs
async def greet(ctx: Ctx, arguments: dict[str, Any]) -> dict[str, Any]:
    return text(f"Hello, {string_arg(arguments, 'name')}!")


def slow_compute(arguments: dict[str, Any]) -> Job:
    seconds = arguments.get("seconds", 1)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= MAX_SLOW_SECONDS:
        raise MCPError(code=types.INVALID_PARAMS, message=f"seconds must be a number from 0 to {MAX_SLOW_SECONDS}")
    label = arguments.get("label")
    label = label if isinstance(label, str) else "slow_compute"

    async def job(task: TaskInput) -> dict[str, Any]:
        await anyio.sleep(seconds)
        return text(f"{label}: computed after {seconds}s")

    return job


def failing_job(arguments: dict[str, Any]) -> Job:
    async def job(task: TaskInput) -> dict[str, Any]:
        await anyio.sleep(FAILING_JOB_DELAY)
        return {"isError": True, **text("failing_job: the job ran and failed (an intentional tool error)")}

    return job


def protocol_error_job(arguments: dict[str, Any]) -> Job:
    async def job(task: TaskInput) -> dict[str, Any]:
        await anyio.sleep(PROTOCOL_ERROR_DELAY)
        raise MCPError(code=types.INTERNAL_ERROR, message="protocol_error_job: simulated internal failure")

    return job


def confirm_delete(arguments: dict[str, Any]) -> Job:
    filename = string_arg(arguments, "filename")

    async def job(task: TaskInput) -> dict[str, Any]:
        answers = await task.ask({"confirm": confirm_question(f"Delete {filename}?")})
        content = accepted(answers["confirm"])
        if content is not None and content.get("confirm") is True:
            return text(f"Deleted {filename}")
        return text(f"Kept {filename}: not confirmed")

    return job


def multi_input(arguments: dict[str, Any]) -> Job:
    async def job(task: TaskInput) -> dict[str, Any]:
        answers = await task.ask(
            {"name": name_question("What should the item be called?"), "confirm": confirm_question("Create it?")}
        )
        name = (accepted(answers["name"]) or {}).get("name")
        confirmed = (accepted(answers["confirm"]) or {}).get("confirm") is True
        return text(f"multi_input: name={name}, confirmed={confirmed}")

    return job


# ------------------------------------------------------------------ MRTR, then a task
WITH_TASK_STATE = "with-task:awaiting-name"


async def ask_name_then_task(ctx: Ctx, args: dict, resp: dict, state: str | None) -> dict | NeedInput:
    """Round 1 asks (key user_name) as an ordinary InputRequiredResult, with no task yet; the
    retry carrying the answer and its requestState gets the CreateTaskResult."""
    if "user_name" not in resp or state != WITH_TASK_STATE:
        return NeedInput({"user_name": name_question("What is your name?")}, WITH_TASK_STATE)
    name = (accepted(resp["user_name"]) or {}).get("name")
    if not isinstance(name, str):
        return text("test_tool_with_task: no name given, so no task was started")

    async def job(task: TaskInput) -> dict[str, Any]:
        await anyio.sleep(GREETING_TASK_DELAY)
        return text(f"Hello, {name}! (greeted by a task)")

    return STORE.create("test_tool_with_task", job)


async def test_tool_with_task(ctx: Ctx, arguments: dict[str, Any]) -> dict[str, Any]:
    require_tasks(ctx, "test_tool_with_task")  # before the MRTR round: the tool cannot end without a task
    return await run_interactive(ctx, ask_name_then_task, arguments)


NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
TASK_TOOLS: dict[str, TaskToolSpec] = {
    "greet": TaskToolSpec(
        "Says hello (sync only: never a task)", greet, schema({"name": {"type": "string"}}, ["name"])
    ),
    "slow_compute": TaskToolSpec(
        "Sleeps `seconds`, then answers (task: optional)",
        task_tool("slow_compute", slow_compute, required=False),
        schema({"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}}),
    ),
    "failing_job": TaskToolSpec(
        "Ends with a tool error after about a second (task: required)",
        task_tool("failing_job", failing_job, required=True),
        NO_ARGS,
    ),
    "protocol_error_job": TaskToolSpec(
        "Ends with a JSON-RPC error, -32603 (task: optional)",
        task_tool("protocol_error_job", protocol_error_job, required=False),
        NO_ARGS,
    ),
    "confirm_delete": TaskToolSpec(
        "Asks for a confirmation through inputRequests, then 'deletes' the file (task: required)",
        task_tool("confirm_delete", confirm_delete, required=True),
        schema({"filename": {"type": "string"}}, ["filename"]),
    ),
    "multi_input": TaskToolSpec(
        "Asks two questions at once through inputRequests (task: required)",
        task_tool("multi_input", multi_input, required=True),
        NO_ARGS,
    ),
    "test_tool_with_task": TaskToolSpec(
        "Asks for a name in an MRTR round (key user_name), then greets it from a task (task: required)",
        test_tool_with_task,
        NO_ARGS,
    ),
}
