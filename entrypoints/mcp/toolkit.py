"""How a toolset module declares its tools: methods of a ``Toolbox`` marked with ``@tool``.

A toolbox gets its use cases by type (``self.use(StoreMemory)``: a builder called per call, so a
server starts without opening a store); each tool method validates nothing itself beyond what its
schema says, calls one use case and renders. The registry (entrypoints/mcp/registry.py) turns the
marked methods into MCP tools: each call is logged once (tool, status, latency; never content),
checks the store first unless the tool reads nothing that needs it, wakes the vector worker after a
write, and renders a domain error in the toolset's own shape (``failure``).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from loguru import logger
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations

from adapters import request_scope
from domain.access.principal import AccessTally, Principal, local_principal
from domain.errors import MemtroveError, StorageError
from domain.validation import require_present
from entrypoints.mcp import identity, render
from entrypoints.mcp.tooling import lax_tool
from entrypoints.runtime import Runtime

T = TypeVar("T")
Failure = Callable[[MemtroveError], CallToolResult]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False)


@dataclass(frozen=True, slots=True)
class ToolMeta:
    description: str
    annotations: ToolAnnotations | None
    needs_store: bool  # False: the tool answers before the store check and the background start
    writes: bool  # the vector worker is woken after it


def tool(description: str, *, annotations: ToolAnnotations | None = None, needs_store: bool = True,
         writes: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a Toolbox method as an MCP tool named after the method."""
    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__memtrove_tool__ = ToolMeta(description, annotations, needs_store, writes)  # type: ignore[attr-defined]
        return fn
    return mark


class Toolbox:
    """The tools of one feature. Subclasses name their toolset and declare tools with ``@tool``."""

    toolset: ClassVar[str]
    # A declared parameter without a default that arrives missing (or null) is refused naming it before
    # the tool runs (spec 001: "Required"); toolsets whose domain checks give the spec's own message say False.
    checks_required: ClassVar[bool] = False

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.local = local_principal(runtime.settings.memtrove_local_clearance)

    def use(self, kind: type[T]) -> Callable[..., T]:
        """A builder of the use case of this type (from the composition root)."""
        return self.runtime.use_case(kind)

    @staticmethod
    def failure(exc: MemtroveError) -> CallToolResult:
        """How this toolset answers a domain error (spec 000's shape unless a toolset says otherwise)."""
        return render.error(exc)

    def failure_of(self, name: str) -> Failure:
        """How the tool ``name`` answers a domain error: the toolset's ``failure`` unless it says more."""
        return self.failure

    def attach(self, server: Any) -> None:
        """What the toolset adds to the server beside its tools (resources); nothing by default."""

    def tools(self) -> list[Tool]:
        declared = [(name, member.__memtrove_tool__) for klass in reversed(type(self).__mro__)
                    for name, member in vars(klass).items() if hasattr(member, "__memtrove_tool__")]
        return [lax_tool(self._guarded(name, meta), meta.description, meta.annotations, failure=self.failure_of(name))
                for name, meta in declared]

    def _guarded(self, name: str, meta: ToolMeta) -> Callable[..., Any]:
        method = getattr(self, name)
        signature = inspect.signature(method, eval_str=True)  # resolved here: the SDK reads them off `call`
        wants_ctx = "ctx" in signature.parameters
        required = [n for n, p in signature.parameters.items()
                    if p.default is inspect.Parameter.empty and n != "ctx"] if self.checks_required else []

        @functools.wraps(method)
        def call(**arguments: Any) -> CallToolResult:
            ctx = arguments.get("ctx") if wants_ctx else arguments.pop("ctx", None)
            principal = identity.transport_principal(ctx, self.local)
            via = identity.transport_via(ctx)

            def check() -> None:  # before the store is looked at: bad input is bad input, store up or down
                for field in required:
                    require_present(field, arguments.get(field))
            return run_tool(self.runtime, name, lambda: method(**arguments), meta, self.failure_of(name), principal,
                            arguments, check, via)

        if not wants_ctx:  # the SDK injects the call's Context where the signature asks for it
            extra = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Context | None)
            call.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])  # type: ignore[attr-defined]
            call.__annotations__ = {**getattr(method, "__annotations__", {}), "ctx": Context | None}
        return call


def run_tool(runtime: Runtime, name: str, action: Callable[[], CallToolResult], meta: ToolMeta,
             failure: Failure, principal: Principal | None = None,
             arguments: dict[str, Any] | None = None, check: Callable[[], None] | None = None,
             via: str | None = None) -> CallToolResult:
    """One log line per call; domain errors become tool errors, an unexpected one a storage error. The
    call runs as ``principal`` (the local owner if None) through ``via`` (its client's token), under a
    request id every log line carries; ``check`` refuses bad input before the store is checked."""
    who = principal or local_principal(runtime.settings.memtrove_local_clearance)
    with request_scope.scope(who, via) as context, \
            logger.contextualize(request_id=context.request_id, actor=context.actor):
        return _run(runtime, name, action, meta, failure, arguments or {}, context.tally, check, via)


def _run(runtime: Runtime, name: str, action: Callable[[], CallToolResult], meta: ToolMeta, failure: Failure,
         arguments: dict[str, Any], tally: AccessTally, check: Callable[[], None] | None,
         via: str | None = None) -> CallToolResult:
    started = time.perf_counter()
    status = "ok"
    body: dict[str, Any] | None = None
    try:
        if check is not None:
            check()
        with runtime.gate.serving():  # a model switch waits for calls in flight, and they for it
            if meta.needs_store:
                runtime.ensure_ready()
            result = action()
        body = result.structured_content if isinstance(result.structured_content, dict) else None
        if meta.writes:
            runtime.kick()
        return result
    except MemtroveError as exc:
        status = exc.kind
        return failure(exc)
    except Exception as exc:  # an unexpected failure still answers, without leaking internals
        status = "internal_error"
        logger.opt(exception=exc).error("tool_failed tool={}", name)
        return failure(StorageError(f"Internal error in {name}: {exc.__class__.__name__}"))
    finally:
        seconds = time.perf_counter() - started
        access = "".join(f" {k}={v}" for k, v in (("withheld", len(tally.withheld)), ("denied", len(tally.denials)))
                         if v)
        logger.info("tool_call tool={} status={} latency_ms={:.1f}{}", name, status, seconds * 1000, access)
        runtime.metrics.observe_tool_call(name, status, seconds, arguments, meta.writes, body)
        runtime.metrics.observe_access(name, len(tally.withheld), tally.denials)
        if via is not None:
            runtime.metrics.observe_client(via, meta.writes, status)
