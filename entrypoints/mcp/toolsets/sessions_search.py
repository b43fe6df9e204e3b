"""Sessions toolset (spec 001): scoped searches and the three granularities over reports, working
memory and the knowledge base (FINE chunks, MEDIUM sections, COARSE whole documents)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from domain.search.usecases import check_flag
from domain.sessions.scope import scope_filter
from domain.sessions.search import FineSearch, MemorySearch, ScopedLookup, SectionSearch, check_query
from entrypoints.mcp.toolkit import READ_ONLY, tool
from entrypoints.mcp.toolsets import sessions_render as out

SessionId = Annotated[str, Field(description="Session identifier")]
Query = Annotated[str, Field(description="Search query, 1-1000 characters")]
CoarseQuery = Annotated[str | None, Field(description="Accepted for compatibility: whole documents come in scope "
                                                      "order (iteration, then time), not ranked by it")]
OptionalQuery = Annotated[str | None, Field(description="Search query (omit for a scoped listing)")]
Agent = Annotated[str | None, Field(description="Only this agent's")]
Session = Annotated[str | None, Field(description="Only this session's")]
Iteration = Annotated[str | None, Field(description="Only this iteration's")]
Task = Annotated[str | None, Field(description="Only this task's")]
Category = Annotated[str | None, Field(description="Only this category's")]
LatestFirst = Annotated[bool, Field(description="Newest iteration first (false: oldest first)")]
ScopedLatestFirst = Annotated[bool, Field(description="Without a query: newest iteration first (false: oldest)")]


def _limit(default: int) -> Any:
    return Annotated[int, Field(description=f"Max results, 1-100 (default {default})")]


Limit5, Limit10 = _limit(5), _limit(10)


class SessionSearchTools(out.SessionsToolbox):

    def _scoped(self, memory_type: str, limit: int, latest_first: bool, query: str | None = None,
                granularity: str | None = None, **scope: str | None) -> CallToolResult:
        labels = scope_filter(memory_type, **scope)
        found = self.use(ScopedLookup)()(labels, limit, latest_first)
        return out.memories([out.memory(m) for m in found], query, labels, limit, latest_first, granularity)

    def _search(self, memory_type: str, granularity: str, query: str | None, limit: int, latest_first: bool,
                **scope: str | None) -> CallToolResult:
        if granularity == "coarse":  # spec 001: a scoped lookup, not ranked by the query
            if query is not None:
                check_query(query)
            return self._scoped(memory_type, limit, latest_first, query, granularity="coarse", **scope)
        labels = scope_filter(memory_type, **scope)
        if granularity == "medium":
            sections = self.use(SectionSearch)()(query, labels, limit)
            return out.granular([out.section(s) for s in sections], "medium", str(query))
        passages = self.use(FineSearch)()(query, labels, limit)
        return out.granular([out.passage(p) for p in passages], "fine", str(query))

    @tool("Session context memories of a session (scoped, newest iteration first).", annotations=READ_ONLY)
    def search_session_context(self, session_id: SessionId, session_iter: Iteration = None, limit: Limit5 = 5,
                               latest_first: LatestFirst = True) -> CallToolResult:
        return self._scoped("session_context", limit, latest_first, session_id=session_id, session_iter=session_iter)

    @tool("Original user prompts of a session (scoped, newest iteration first).", annotations=READ_ONLY)
    def search_input_prompts(self, session_id: SessionId, session_iter: Iteration = None, limit: Limit5 = 5,
                             latest_first: LatestFirst = True) -> CallToolResult:
        return self._scoped("input_prompt", limit, latest_first, session_id=session_id, session_iter=session_iter)

    @tool("System memory (configs, commands): by meaning and words with a query, else scoped.",
          annotations=READ_ONLY)
    def search_system_memory(self, query: OptionalQuery = None, agent_id: Agent = None, session_id: Session = None,
                             session_iter: Iteration = None, task_code: Task = None,
                             limit: Limit10 = 10, latest_first: ScopedLatestFirst = True) -> CallToolResult:
        scope = {"agent_id": agent_id, "session_id": session_id, "session_iter": session_iter, "task_code": task_code}
        if query is None:
            return self._scoped("system_memory", limit, latest_first, **scope)
        labels = scope_filter("system_memory", **scope)
        newest = check_flag("latest_first", latest_first)  # checked, though a query ranks by its passages
        found = self.use(MemorySearch)()(query, labels, limit)
        return out.memories([out.memory(m, similarity, "vector") for m, similarity in found], query, labels,
                            limit, newest)


GRANULARITIES = {"specific_chunks": (10, "FINE: the best chunks (~a section each), similarity per chunk"),
                 "section_context": (5, "MEDIUM: matching chunks grouped by H1 > H2 section, each section whole, "
                                        "auto_merged when >= 60% of it matched"),
                 "full_documents": (3, "COARSE: whole documents in scope order (similarity 2.0)")}  # default limit
KINDS = {"reports": ("report", "reports"), "working_memory": ("working_memory", "working memory"),
         "knowledge_base": ("knowledge_base", "knowledge base entries")}


SCOPES = {"agent_id": Agent, "session_id": Session, "session_iter": Iteration, "task_code": Task, "category": Category}


def _granular(kind: str, suffix: str) -> Callable[..., CallToolResult]:
    """``search_{kind}_{suffix}``: the query, the kind's scope filters, the limit (COARSE: and the order)."""
    memory_type, shown = KINDS[kind]
    granularity, (default, summary) = out.GRANULARITY[suffix], GRANULARITIES[suffix]
    coarse = granularity == "coarse"
    scope = ("agent_id", "category") if kind == "knowledge_base" else ("agent_id", "session_id", "session_iter",
                                                                       "task_code")
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", keyword),
              inspect.Parameter("query", keyword, annotation=CoarseQuery if coarse else Query,
                                **({"default": None} if coarse else {})),
              *(inspect.Parameter(name, keyword, annotation=SCOPES[name], default=None) for name in scope),
              inspect.Parameter("limit", keyword, annotation=_limit(default), default=default),
              *([inspect.Parameter("latest_first", keyword, annotation=LatestFirst, default=True)] if coarse else [])]

    def search(self: SessionSearchTools, **arguments: Any) -> CallToolResult:
        query, limit = arguments.pop("query", None), arguments.pop("limit", default)
        latest_first = arguments.pop("latest_first", True)
        return self._search(memory_type, granularity, query, limit, latest_first, **arguments)

    search.__signature__ = inspect.Signature(params, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    search.__annotations__ = {p.name: p.annotation for p in params[1:]} | {"return": CallToolResult}
    search.__name__ = search.__qualname__ = f"search_{kind}_{suffix}"
    return tool(f"Search {shown}. {summary}.", annotations=READ_ONLY)(search)


for _kind in KINDS:
    for _suffix in GRANULARITIES:
        _made = _granular(_kind, _suffix)
        setattr(SessionSearchTools, _made.__name__, _made)
