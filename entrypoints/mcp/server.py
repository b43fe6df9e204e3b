"""The MCP server: the tools of the enabled toolsets over one Runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer

from entrypoints.mcp.registry import build_tools, toolboxes
from entrypoints.mcp.resources import MemtroveServer
from entrypoints.runtime import WARM_UP_DELAY, Runtime

VERSION = "0.1.0"
INSTRUCTIONS = (
    "memtrove stores durable memories (facts, preferences, projects, decisions) and conversation "
    "history, and finds them again by meaning. Store what should outlive this conversation with "
    "memory_store; look it up with memory_search before asking the user again."
)


def build_server(runtime: Runtime, toolsets: Sequence[str] | None = None) -> MCPServer:
    """``toolsets``: by default those MEMTROVE_TOOLSETS names (Settings refused unknown ones at start)."""
    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[Runtime]:
        runtime.warm_up(delay=WARM_UP_DELAY if runtime.settings.memtrove_warmup else 0.0,
                        load_model=runtime.settings.memtrove_warmup)
        yield runtime

    boxes = toolboxes(runtime, runtime.settings.toolsets if toolsets is None else toolsets)
    server = MemtroveServer("memtrove", version=VERSION, instructions=INSTRUCTIONS, lifespan=lifespan,
                            log_level="WARNING", tools=build_tools(boxes))
    for box in boxes:
        box.attach(server)
    return server
