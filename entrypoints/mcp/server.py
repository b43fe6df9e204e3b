"""The MCP server: thin tools that validate, call one use case and render the result."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from loguru import logger
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from domain.errors import MemtroveError, StorageError
from domain.model import MEMORY_TYPES, ROLES
from domain.history.usecases import AppendTurnRequest
from domain.memories.usecases import StoreMemoryRequest
from domain.search.usecases import SearchMemoriesRequest
from entrypoints.mcp import render
from entrypoints.mcp.toolsets.artifacts import register_artifact_tools, register_reembed_tool
from entrypoints.runtime import WARM_UP_DELAY, Runtime
from entrypoints.mcp.tooling import Mode, Profile, lax_tool

VERSION = "0.1.0"
INSTRUCTIONS = (
    "memtrove stores durable memories (facts, preferences, projects, decisions) and conversation "
    "history, and finds them again by meaning. Store what should outlive this conversation with "
    "memory_store; look it up with memory_search before asking the user again."
)


def run_tool(runtime: Runtime, name: str, action: Callable[[], CallToolResult], ready: bool = True) -> CallToolResult:
    """One log line per call (tool, status, latency; never content); domain errors become tool errors."""
    started = time.perf_counter()
    status = "ok"
    try:
        if ready:
            runtime.ensure_ready()
        return action()
    except MemtroveError as exc:
        status = exc.kind
        return render.error(exc)
    except Exception as exc:  # an unexpected failure still answers, without leaking internals
        status = "internal_error"
        logger.opt(exception=exc).error("tool_failed tool={}", name)
        return render.error(StorageError(f"Internal error in {name}: {exc.__class__.__name__}"))
    finally:
        logger.info("tool_call tool={} status={} latency_ms={:.1f}", name, status,
                    (time.perf_counter() - started) * 1000)


def build_server(runtime: Runtime) -> MCPServer:
    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[Runtime]:
        runtime.warm_up(delay=WARM_UP_DELAY if runtime.settings.memtrove_warmup else 0.0,
                        load_model=runtime.settings.memtrove_warmup)
        yield runtime

    uc = runtime.app.use_cases
    tools: list[Tool] = []

    def tool(description: str, annotations: ToolAnnotations | None = None) -> Callable[[Callable[..., Any]], Any]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tools.append(lax_tool(fn, description, annotations))
            return fn
        return register

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    @tool("Store a durable memory (preference, fact, project or decision).")
    def memory_store(
        content: Annotated[str, Field(description="Memory content, 1-10000 characters")],
        type: Annotated[str, Field(description="One of: " + ", ".join(MEMORY_TYPES),
                                   json_schema_extra={"enum": list(MEMORY_TYPES)})],
        confidence: Annotated[float, Field(description="Confidence score, 0.0-1.0")],
        conversation_id: Annotated[str | None, Field(description="Optional context, up to 100 characters")] = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            stored = uc.store_memory()(StoreMemoryRequest(content, type, confidence, conversation_id))
            runtime.kick()
            return render.ok(render.memory(stored), f"Stored memory [{stored.id}]: {render.preview(content, 60)}")
        return run_tool(runtime, "memory_store", act)

    @tool("Search memories by meaning and by words (fused); best matches first.", read_only)
    def memory_search(
        query: Annotated[str, Field(description="Search query, 1-500 characters")],
        limit: Annotated[int, Field(description="Max results, 1-20")] = 5,
        min_confidence: Annotated[float, Field(description="Only memories with at least this confidence, 0.0-1.0")] = 0.0,
        mode: Mode = "hybrid",
        profile: Profile = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            hits = uc.search_memories()(SearchMemoriesRequest(query, limit, min_confidence, mode, profile))
            text = "\n".join(render.memory_line(h, True) for h in hits) or "No memories found."
            return render.ok({"query": query, "count": len(hits), "results": [render.hit(h) for h in hits]}, text)
        return run_tool(runtime, "memory_search", act)

    @tool("List the most recent memories, optionally of one type.", read_only)
    def memory_list(
        type: Annotated[str | None, Field(description="Filter by type: " + ", ".join(MEMORY_TYPES),
                                          json_schema_extra={"enum": [*MEMORY_TYPES, None]})] = None,
        limit: Annotated[int, Field(description="Max results, 1-100")] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page, to read on")] = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            page = uc.list_memories()(type, limit, cursor)
            hits = page.items
            lines = [f"Found {len(hits)} memories:", *(render.memory_line(h, False) for h in hits)]
            if page.next_cursor:
                lines.append(f"More: call again with cursor={page.next_cursor}")
            return render.ok({"count": len(hits), "results": [render.hit(h) for h in hits],
                              "next_cursor": page.next_cursor}, "\n".join(lines))
        return run_tool(runtime, "memory_list", act, ready=False)

    @tool("Delete a memory by id.", ToolAnnotations(destructive_hint=True, idempotent_hint=True,
                                                    open_world_hint=False))
    def memory_delete(
        memory_id: Annotated[str, Field(description="Memory ID, starts with 'mem_'")],
    ) -> CallToolResult:
        def act() -> CallToolResult:
            deleted = uc.delete_memory()(memory_id)
            runtime.kick()
            return render.ok({"id": deleted, "deleted": True}, f"Deleted memory: {deleted}")
        return run_tool(runtime, "memory_delete", act)

    @tool("Append a turn to a conversation (same turn and content again is a no-op).")
    def history_append(
        conversation_id: Annotated[str, Field(description="Conversation ID, 1-100 characters")],
        role: Annotated[str, Field(description="Speaker role: " + ", ".join(ROLES),
                                   json_schema_extra={"enum": list(ROLES)})],
        content: Annotated[str, Field(description="Message content, 1-50000 characters")],
        turn_index: Annotated[int, Field(description="Turn number, >= 0")],
        ts: Annotated[str | None, Field(description="When the turn happened, ISO-8601 (default: now)")] = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            result = uc.append_turn()(AppendTurnRequest(conversation_id, role, content, turn_index, ts))
            runtime.kick()
            t = result.turn
            text = {"appended": f"Appended turn {t.turn_index} to {t.conversation_id}",
                    "replaced": f"Replaced turn {t.turn_index} of {t.conversation_id}",
                    "unchanged": f"Turn {t.turn_index} of {t.conversation_id} already stored (unchanged)"}
            body = {k: v for k, v in render.turn(t).items() if k != "content"}
            return render.ok({**body, "status": result.status}, text[result.status])
        return run_tool(runtime, "history_append", act)

    @tool("Get the most recent turns of a conversation, oldest first.", read_only)
    def history_get(
        conversation_id: Annotated[str, Field(description="Conversation ID, 1-100 characters")],
        limit: Annotated[int, Field(description="Number of recent turns, 1-50")] = 16,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page: the turns before it")] = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            page = uc.get_history()(conversation_id, limit, cursor)
            turns = page.items
            text = "\n".join(f"{t.role}: {t.content}" for t in turns) or f"No turns in {conversation_id}."
            if page.next_cursor:
                text += f"\nEarlier turns: call again with cursor={page.next_cursor}"
            return render.ok({"conversation_id": conversation_id, "count": len(turns),
                              "turns": [render.turn(t) for t in turns], "next_cursor": page.next_cursor}, text)
        return run_tool(runtime, "history_get", act, ready=False)

    @tool("Check the embedding provider: configuration, reachability, latency.", read_only)
    def embedding_health() -> CallToolResult:
        def act() -> CallToolResult:
            report: dict[str, Any] = uc.embedding_health()()
            return render.ok(report, render.as_json(report))
        return run_tool(runtime, "embedding_health", act)

    register_artifact_tools(runtime, tool, run_tool, read_only)
    register_reembed_tool(runtime, tool, run_tool)
    return MCPServer("memtrove", version=VERSION, instructions=INSTRUCTIONS, lifespan=lifespan,
                     log_level="WARNING", tools=tools)
