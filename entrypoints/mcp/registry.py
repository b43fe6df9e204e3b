"""The toolsets a server offers, chosen by MEMTROVE_TOOLSETS, and the MCP tools built from them.

A toolset is a name and the Toolbox classes (one per feature module) that declare its tools. Every
toolset is a view over the same store and the same retrieval: a tool calls a use case of the
domain, never a storage or search path of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp.server.mcpserver.tools import Tool

from config.settings import TOOLSETS as SETTINGS_TOOLSETS
from entrypoints.mcp.toolkit import Toolbox
from entrypoints.mcp.toolsets.artifacts import ArtifactTools
from entrypoints.mcp.toolsets.console import ConsoleTools
from entrypoints.mcp.toolsets.documents import DocumentTools
from entrypoints.mcp.toolsets.changes import ChangeTools
from entrypoints.mcp.toolsets.code import CodeTools
from entrypoints.mcp.toolsets.graph import GraphTools
from entrypoints.mcp.toolsets.history import HistoryTools
from entrypoints.mcp.toolsets.memories import MemoryTools
from entrypoints.mcp.toolsets.search import SearchTools
from entrypoints.mcp.toolsets.sessions_search import SessionSearchTools
from entrypoints.mcp.toolsets.sessions_store import SessionStoreTools
from entrypoints.mcp.toolsets.sessions_utility import SessionUtilityTools
from entrypoints.mcp.toolsets.upkeep import UpkeepTools
from entrypoints.mcp.toolsets.zapomni import ZapomniTools
from entrypoints.runtime import Runtime

TOOLSETS: dict[str, tuple[type[Toolbox], ...]] = {
    "core": (MemoryTools, HistoryTools, ArtifactTools, SearchTools, UpkeepTools),
    "sessions": (SessionStoreTools, SessionSearchTools, SessionUtilityTools),
    "zapomni": (ZapomniTools,),
    "documents": (DocumentTools,),
    "console": (ConsoleTools,),
    "graph": (GraphTools,),
    "time": (ChangeTools,),
    "code": (CodeTools,),
}
assert tuple(TOOLSETS) == SETTINGS_TOOLSETS, "config.settings.TOOLSETS names the registry's toolsets"
TOOL_NAME = re.compile(r"\A[a-zA-Z0-9_-]{1,64}\Z")  # what every client accepts (some refuse dots)


def toolboxes(runtime: Runtime, toolsets: Sequence[str]) -> list[Toolbox]:
    """The chosen toolsets' toolboxes, each given the runtime."""
    return [toolbox(runtime) for toolset in toolsets for toolbox in TOOLSETS[toolset]]


def build_tools(boxes: Sequence[Toolbox]) -> list[Tool]:
    """The toolboxes' tools; a name clients would refuse, or declared twice, is a bug."""
    tools: list[Tool] = []
    owner: dict[str, str] = {}
    for box in boxes:
        for made in box.tools():
            if not TOOL_NAME.match(made.name):
                raise ValueError(f"tool name {made.name!r} of toolset {box.toolset} is not ^[a-zA-Z0-9_-]{{1,64}}$")
            if made.name in owner:
                raise ValueError(f"tool {made.name!r} of toolset {box.toolset} is already in {owner[made.name]}")
            owner[made.name] = box.toolset
            tools.append(made)
    return tools
