"""The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) of the 2026-07-28 fixture.

The Python SDK (`mcp` 2.3.0) has no tasks, so the fixture implements the extension by hand:
  - a task store keyed by `taskId` alone (not by connection: any gateway replica reaches any
    task), whose jobs run in one task group owned by the server's lifespan, so a job outlives
    the `tools/call` that created it and ends with the server;
  - `task_tool(...)`: turns a job into a `tools/call` handler. A request that declares the
    extension in its own `_meta` clientCapabilities gets a flat `CreateTaskResult`
    (`resultType: "task"`); one that does not gets the job run inline (optional tools) or
    -32021 naming the extension (required tools), before the job starts;
  - `tasks/get` (the DetailedTask), `tasks/update` (answers to outstanding `inputRequests`)
    and `tasks/cancel` (an empty ack; the task is `cancelled` at once and its job stopped);
  - `subscriptions/listen` with `notifications.taskIds`: the DetailedTask as a
    `notifications/tasks` on every change of an acknowledged task (other listens go to the
    SDK's ListenHandler unchanged).

Every tasks/* request is checked in this order, before any task is looked up (so a client that
did not declare the extension learns nothing about ids): the era (the extension is undefined
before 2026-07-28: -32601), `Mcp-Name` present and equal to `params.taskId` (-32020, HTTP 400;
SEP-2663 makes the header a MUST on Streamable HTTP, so this fixture, used as a gateway's
upstream, also proves the gateway sends it), the extension declared on this request (-32021
with `data.requiredCapabilities`, HTTP 400), then the id (-32602 when unknown or expired).

Invariants: a `CreateTaskResult` is returned only once its task is in the store (an immediate
`tasks/get` resolves); a terminal status (completed, failed, cancelled) never changes; an
`inputRequests` key is never reused within a task; a task is readable for `TASK_TTL_MS` from
its creation, then forgotten and its job cancelled. Bounds: `MAX_TASKS` live tasks,
`MAX_LISTEN_TASK_IDS` ids per listen, `MAX_TASK_LISTENS` such listens, `MAX_LISTEN_BUFFER`
undelivered frames per listen stream.

Not here: the tools themselves (task_tools.py), MRTR rounds before a task exists (mrtr.py),
and 2025-11-25's core tasks: `tasks/result` and `tasks/list` are not registered, so the SDK
answers them -32601 (as SEP-2663 requires at 2026-07-28).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.streams.memory
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import ListenHandler, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, event_matches, event_to_notification

logger = logging.getLogger("conformance-fixture-2026.tasks")

Ctx = ServerRequestContext[Any, Any]

EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 300_000  # how long a task stays readable after its creation (ttlMs on the wire)
POLL_INTERVAL_MS = 200  # pollIntervalMs suggested to clients (the suite polls every 200 ms)
MAX_TASKS = 1024  # live tasks; creating one more answers -32603 until some expire
MAX_LISTEN_TASK_IDS = 256  # taskIds one subscriptions/listen may name
MAX_TASK_LISTENS = 64  # concurrent listen streams that carry taskIds
MAX_LISTEN_BUFFER = 256  # frames queued for one listen stream; a stream that falls behind is ended
TERMINAL = frozenset({"completed", "failed", "cancelled"})
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def missing_extension(why: str) -> MCPError:
    """-32021 (HTTP 400 at 2026-07-28) naming the extension in `data.requiredCapabilities`."""
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"Missing required client capability: extensions[{EXTENSION}] ({why})",
        data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def declares_tasks(ctx: Ctx) -> bool:
    """Whether THIS request declared the extension (its `_meta` clientCapabilities; the SDK
    builds the stateless connection from them). Never true before 2026-07-28 (SEP-2663)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = ctx.session.client_capabilities
    extensions = caps.extensions if caps is not None else None
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict)


def require_tasks(ctx: Ctx, tool: str) -> None:
    if not declares_tasks(ctx):
        raise missing_extension(f"{tool} runs only as a task")


# ------------------------------------------------------------------ tasks and their store
@dataclass(eq=False)
class Task:
    task_id: str
    tool: str
    created: float  # wall clock, for createdAt
    deadline: float  # monotonic: readable until then
    updated: float = 0.0
    status: str = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None  # completed: the tools/call result
    error: dict[str, Any] | None = None  # failed: the JSON-RPC error
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)  # outstanding, by key
    answers: dict[str, Any] = field(default_factory=dict)  # taken by tasks/update, not yet read by the job
    answered: anyio.Event | None = None  # set once every outstanding request has its answer
    keys_minted: int = 0
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def envelope(self) -> dict[str, Any]:
        """The `Task` members (what CreateTaskResult carries besides resultType)."""
        out: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        out.update(
            createdAt=iso(self.created),
            lastUpdatedAt=iso(self.updated),
            ttlMs=TASK_TTL_MS,
            pollIntervalMs=POLL_INTERVAL_MS,
        )
        return out

    def detailed(self) -> dict[str, Any]:
        """The DetailedTask: the envelope plus the one member its status defines."""
        out = self.envelope()
        if self.status == "input_required":
            out["inputRequests"] = dict(self.input_requests)
        elif self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        return out


# A job is what a task runs: it gets a TaskInput to ask the client, returns a CallToolResult
# (a tool error, isError: true, still completes the task) or raises MCPError (the task fails).
Job = Callable[["TaskInput"], Awaitable[dict[str, Any]]]


class TaskInput:
    """What a job uses to ask its client for input (`inputRequests` on tasks/get)."""

    def __init__(self, store: TaskStore | None, task: Task | None) -> None:
        self._store, self._task = store, task

    async def ask(self, questions: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Ask every question at once; returns the answers by the questions' own names once the
        client has answered all of them (in one tasks/update or several)."""
        if self._store is None or self._task is None:
            # Run inline for a client without the extension: nowhere to put inputRequests.
            raise missing_extension("this call needs input, which a task asks through tasks/update")
        return await self._store.ask(self._task, questions)


INLINE = TaskInput(None, None)


class TaskStore:
    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._watchers: dict[str, dict[object, Callable[[dict[str, Any]], None]]] = {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Owns the jobs' task group for the server's lifetime; leaving it cancels every job."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def create(self, tool: str, job: Job) -> dict[str, Any]:
        """Store a task, start its job, return the CreateTaskResult (flat: Result & Task)."""
        if self._group is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="the task runner is not running")
        self._purge()
        if len(self._tasks) >= MAX_TASKS:
            raise MCPError(code=types.INTERNAL_ERROR, message=f"too many live tasks (at most {MAX_TASKS})")
        now = time.time()
        task = Task(secrets.token_urlsafe(24), tool, now, time.monotonic() + TASK_TTL_MS / 1000, now)
        task.status_message = f"{tool} is running"
        self._tasks[task.task_id] = task
        self._group.start_soon(self._run, task, job, name=f"task {tool}")
        return {"resultType": "task", **task.envelope()}

    def get(self, task_id: str) -> Task | None:
        self._purge()
        return self._tasks.get(task_id)

    def _purge(self) -> None:
        now = time.monotonic()
        for task_id in [t.task_id for t in self._tasks.values() if t.deadline <= now]:
            task = self._tasks.pop(task_id)
            task.scope.cancel()  # a job still running at its TTL is abandoned
            self._watchers.pop(task_id, None)

    async def _run(self, task: Task, job: Job) -> None:
        with task.scope:
            try:
                result = await job(TaskInput(self, task))
            except MCPError as e:
                error = e.error.model_dump(by_alias=True, mode="json", exclude_none=True)
                self._set(task, "failed", f"{task.tool} failed: {e.error.message}", error=error)
            except Exception:
                logger.exception("task job %s raised", task.tool)
                error = {"code": types.INTERNAL_ERROR, "message": f"{task.tool}: internal error"}
                self._set(task, "failed", f"{task.tool} failed: internal error", error=error)
            else:
                done = "ended with a tool error" if result.get("isError") else "completed"
                self._set(task, "completed", f"{task.tool} {done}", result={"isError": False, **result})

    def _set(self, task: Task, status: str, message: str, **members: Any) -> None:
        """The one place a task changes; tells its watchers. Terminal statuses are final."""
        if task.status in TERMINAL:
            return
        task.status, task.status_message, task.updated = status, message, time.time()
        for name, value in members.items():
            setattr(task, name, value)
        snapshot = task.detailed()
        for notify in list(self._watchers.get(task.task_id, {}).values()):
            notify(snapshot)

    async def ask(self, task: Task, questions: dict[str, dict[str, Any]]) -> dict[str, Any]:
        keys: dict[str, str] = {}  # minted key -> the question's own name
        for name in questions:
            task.keys_minted += 1
            keys[f"{name}-{task.keys_minted}"] = name
        task.input_requests.update({key: questions[name] for key, name in keys.items()})
        task.answered = anyio.Event()
        self._set(task, "input_required", f"{task.tool} is waiting for {len(keys)} answer(s)")
        await task.answered.wait()
        return {name: task.answers.pop(key) for key, name in keys.items()}

    def update(self, task: Task, responses: dict[str, Any]) -> None:
        """Take the answers to outstanding keys; ignore others (never issued, already answered,
        or the task is not waiting), as SEP-2663 says servers SHOULD. A subset is fine: the
        task stays input_required until the rest arrive."""
        taken = [key for key in responses if key in task.input_requests]
        for key in taken:
            if not isinstance(responses[key], dict):
                raise MCPError(code=types.INVALID_PARAMS, message=f"inputResponses[{key!r}] must be an object")
        if not taken or task.status != "input_required":
            return
        for key in taken:
            task.answers[key] = responses[key]
            del task.input_requests[key]
        if task.input_requests:
            self._set(task, "input_required", f"{task.tool} is waiting for {len(task.input_requests)} answer(s)")
        else:
            self._set(task, "working", f"{task.tool} is running")
            if task.answered is not None:
                task.answered.set()

    def cancel(self, task: Task) -> None:
        """Cooperative, but immediate here: the task reads `cancelled` at once, its job is stopped."""
        if task.status in TERMINAL:
            return
        task.input_requests.clear()
        self._set(task, "cancelled", f"{task.tool} was cancelled by the client")
        task.scope.cancel()

    def watch(self, task_ids: list[str], notify: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `notify(DetailedTask)` on every change of these tasks until the returned callable runs."""
        token = object()
        for task_id in task_ids:
            self._watchers.setdefault(task_id, {})[token] = notify

        def unwatch() -> None:
            for task_id in task_ids:
                self._watchers.get(task_id, {}).pop(token, None)

        return unwatch


STORE = TaskStore()


@asynccontextmanager
async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
    """The server lifespan: runs the task store's jobs (the SDK's manager enters it once)."""
    async with STORE.running():
        yield {}


# ------------------------------------------------------------------ tools/call
ToolHandler = Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]


def task_tool(name: str, prepare: Callable[[dict[str, Any]], Job], *, required: bool) -> ToolHandler:
    """A tools/call handler for a task-capable tool.

    `prepare(arguments)` validates the arguments (raising -32602 before any task exists) and
    returns the job. The server alone decides to make a task (SEP-2663): it does whenever the
    request declared the extension. Otherwise an optional tool runs the job inline and answers
    its result as usual, and a required one answers -32021 without running it.
    """

    async def handler(ctx: Ctx, arguments: dict[str, Any]) -> dict[str, Any]:
        if not declares_tasks(ctx):
            if required:
                raise missing_extension(f"{name} runs only as a task")
            return await prepare(arguments)(INLINE)
        return STORE.create(name, prepare(arguments))

    return handler


# ------------------------------------------------------------------ tasks/get, update, cancel
class TaskParams(types.RequestParams):
    # Checked by hand (taskId, inputResponses) so the order of the checks is this module's.
    model_config = ConfigDict(extra="allow")


def check_name_header(ctx: Ctx, method: str, task_id: Any) -> None:
    headers = ctx.request.headers if ctx.request is not None else None
    if headers is None:  # not HTTP (stdio): nothing to route on
        return
    raw = headers.get(MCP_NAME_HEADER)
    if raw is None:
        raise MCPError(code=types.HEADER_MISMATCH, message=f"{method} needs the Mcp-Name header (params.taskId)")
    if not isinstance(task_id, str) or decode_header_value(raw.strip()) != task_id:
        raise MCPError(code=types.HEADER_MISMATCH, message="Mcp-Name header does not match params.taskId")


def open_task(ctx: Ctx, method: str) -> Task:
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(code=types.METHOD_NOT_FOUND, message=f"{method} exists only at 2026-07-28 ({EXTENSION})")
    task_id = (ctx.params or {}).get("taskId")
    check_name_header(ctx, method, task_id)
    if not declares_tasks(ctx):
        raise missing_extension(f"{method} needs it declared on the request")
    if not isinstance(task_id, str):
        raise MCPError(code=types.INVALID_PARAMS, message=f"{method}: params.taskId must be a string")
    task = STORE.get(task_id)
    if task is None:
        raise MCPError(code=types.INVALID_PARAMS, message="Failed to retrieve task: Task not found")
    return task


async def tasks_get(ctx: Ctx, params: TaskParams) -> dict[str, Any]:
    return {"resultType": "complete", **open_task(ctx, "tasks/get").detailed()}


async def tasks_update(ctx: Ctx, params: TaskParams) -> dict[str, Any]:
    task = open_task(ctx, "tasks/update")
    responses = (ctx.params or {}).get("inputResponses")
    if not isinstance(responses, dict):
        raise MCPError(code=types.INVALID_PARAMS, message="tasks/update: params.inputResponses must be an object")
    STORE.update(task, responses)
    return {"resultType": "complete"}  # an ack; the task's state is read with tasks/get


async def tasks_cancel(ctx: Ctx, params: TaskParams) -> dict[str, Any]:
    STORE.cancel(open_task(ctx, "tasks/cancel"))
    return {"resultType": "complete"}  # the same ack for a task that had already ended


# ------------------------------------------------------------------ subscriptions/listen taskIds
class TasksNotification(types.Notification[dict[str, Any], Literal["notifications/tasks"]]):
    method: Literal["notifications/tasks"] = "notifications/tasks"


class TasksListen:
    """`subscriptions/listen` that also honours `notifications.taskIds` (SEP-2663).

    A listen without `taskIds` is the SDK's ListenHandler's, unchanged. With `taskIds`: the
    extension must be declared on the request (-32021); the acknowledgment lists the standard
    kinds the SDK would honour plus the ids of tasks that exist now; then the stream carries
    the standard events and a `notifications/tasks` (the DetailedTask) for each change.
    """

    def __init__(self, bus: SubscriptionBus, store: TaskStore) -> None:
        self._bus, self._store = bus, store
        self._inner = ListenHandler(bus)
        self._streams: set[anyio.streams.memory.MemoryObjectSendStream[Any]] = set()

    async def __call__(self, ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> Any:
        requested = params.notifications
        task_ids = (requested.model_extra or {}).get("taskIds")
        if task_ids is None:
            return await self._inner(ctx, params)
        if not declares_tasks(ctx):
            raise missing_extension("subscriptions/listen with taskIds needs it declared on the request")
        if not isinstance(task_ids, list) or not all(isinstance(i, str) for i in task_ids):
            raise MCPError(code=types.INVALID_PARAMS, message="notifications.taskIds must be an array of strings")
        if len(task_ids) > MAX_LISTEN_TASK_IDS:
            raise MCPError(code=types.INVALID_PARAMS, message=f"at most {MAX_LISTEN_TASK_IDS} taskIds per listen")
        if len(self._streams) >= MAX_TASK_LISTENS:
            raise MCPError(code=types.INTERNAL_ERROR, message="Subscription limit reached")
        return await self._serve(ctx, requested, [i for i in dict.fromkeys(task_ids) if self._store.get(i)])

    async def _serve(self, ctx: Ctx, requested: types.SubscriptionFilter, task_ids: list[str]) -> Any:
        subscription_id = ctx.request_id
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        honored = types.SubscriptionFilter(
            tools_list_changed=True if requested.tools_list_changed else None,
            prompts_list_changed=True if requested.prompts_list_changed else None,
            resources_list_changed=True if requested.resources_list_changed else None,
            resource_subscriptions=list(requested.resource_subscriptions or []) or None,
            taskIds=task_ids,
        )
        uris = frozenset(honored.resource_subscriptions or ())
        send, recv = anyio.create_memory_object_stream[Any](MAX_LISTEN_BUFFER)

        def push(frame: ServerEvent | dict[str, Any]) -> None:
            try:
                send.send_nowait(frame)
            except anyio.ClosedResourceError:
                pass
            except anyio.WouldBlock:
                logger.warning("listen stream %r backlog full; ending the stream", subscription_id)
                self._streams.discard(send)
                send.close()

        def on_event(event: ServerEvent) -> None:
            if event_matches(honored, uris, event):
                push(event)

        # Subscribed before the ack, so nothing that changes while it is written is lost.
        unsubscribe = self._bus.subscribe(on_event)
        unwatch = self._store.watch(task_ids, push)
        self._streams.add(send)
        try:
            ack = types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(params=ack), related_request_id=subscription_id
            )
            async for frame in recv:
                if isinstance(frame, dict):
                    note: Any = TasksNotification(params={**frame, "_meta": meta})
                else:
                    note = event_to_notification(frame, meta)
                await ctx.session.send_notification(note, related_request_id=subscription_id)
        finally:
            unsubscribe()
            unwatch()
            self._streams.discard(send)
            send.close()
            recv.close()
        return types.SubscriptionsListenResult(_meta=meta)

    def close(self) -> None:
        """End every listen stream gracefully (each sends its final SubscriptionsListenResult)."""
        self._inner.close()
        for stream in list(self._streams):
            stream.close()


def install(server: Server[Any]) -> None:
    """Advertise the extension in server/discover and serve tasks/get, update and cancel."""
    server.extensions[EXTENSION] = {}
    server.add_request_handler("tasks/get", TaskParams, tasks_get)
    server.add_request_handler("tasks/update", TaskParams, tasks_update)
    server.add_request_handler("tasks/cancel", TaskParams, tasks_cancel)
