"""Sessions toolset (spec 001): the seven store tools."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from domain.sessions.store import BeingStored, StoreSessionMemory, StoreSessionRequest
from entrypoints.mcp.long_calls import StillRunning, run_long
from entrypoints.mcp.toolkit import tool
from entrypoints.mcp.toolsets import sessions_render as out

SessionId = Annotated[str, Field(description="Session identifier")]
Iteration = Annotated[str, Field(description='Iteration, e.g. "v1" (ordered naturally: v2 before v10)')]
OptionalIteration = Annotated[str | None, Field(description="Iteration")]
Task = Annotated[str | None, Field(description="Task code, for filtering")]
Agent = Annotated[str, Field(description="Agent identifier")]
Content = Annotated[str, Field(description="Content, up to 500,000 characters")]
Markdown = Annotated[str, Field(description="Content (Markdown; chunked by section when long), up to 500,000 "
                                             "characters")]


class SessionStoreTools(out.SessionsToolbox):

    def _store(self, memory_type: str, content: str, ctx: Context | None, **scope: str | None) -> CallToolResult:
        """Within MEMTROVE_CALL_BUDGET the stored memory; past it the memory's id while its embedding goes
        on in the background (it is searchable once complete), as artifact_ingest does."""
        put = self.use(StoreSessionMemory)()
        planned = put.plan(StoreSessionRequest(memory_type, content, **scope))
        result = run_long(self.runtime, ctx, lambda progress: put.run(planned, progress),
                          self.runtime.settings.memtrove_call_budget)
        if isinstance(result, StillRunning):
            return out.storing(planned, result.latest, None)
        if isinstance(result, BeingStored):  # on its way in through another call
            return out.storing(planned, (result.memory_id, result.done, result.total), result.chunks,
                               result.duplicate)
        return out.stored(result)

    @tool("Store session context (main orchestrator): a session snapshot for continuity.", writes=True)
    def store_session_context(self, session_id: SessionId, session_iter: Iteration, content: Content,
                              task_code: Task = None, ctx: Context | None = None) -> CallToolResult:
        return self._store("session_context", content, ctx, session_id=session_id, session_iter=session_iter,
                           task_code=task_code)

    @tool("Store the user's original prompt verbatim (main orchestrator).", writes=True)
    def store_input_prompt(self, session_id: SessionId, session_iter: Iteration, content: Content,
                           task_code: Task = None, ctx: Context | None = None) -> CallToolResult:
        return self._store("input_prompt", content, ctx, session_id=session_id, session_iter=session_iter,
                           task_code=task_code)

    @tool("Store system memory: configs, commands, scripts, endpoints.", writes=True)
    def store_system_memory(self, agent_id: Agent, session_id: SessionId, content: Content,
                            session_iter: OptionalIteration = None, task_code: Task = None,
                            ctx: Context | None = None) -> CallToolResult:
        return self._store("system_memory", content, ctx, agent_id=agent_id, session_id=session_id,
                           session_iter=session_iter, task_code=task_code)

    @tool("Store an agent's report (analysis findings); long reports are chunked by section.", writes=True)
    def store_report(self, agent_id: Agent, session_id: SessionId, content: Markdown,
                     session_iter: OptionalIteration = None, task_code: Task = None,
                     ctx: Context | None = None) -> CallToolResult:
        return self._store("report", content, ctx, agent_id=agent_id, session_id=session_id, session_iter=session_iter,
                           task_code=task_code)

    @tool("Store an observation on an existing report (follow-up, correction).", writes=True)
    def store_report_observation(self, agent_id: Agent, session_id: SessionId, content: Content,
                                 session_iter: OptionalIteration = None, task_code: Task = None,
                                 ctx: Context | None = None) -> CallToolResult:
        return self._store("report_observation", content, ctx, agent_id=agent_id, session_id=session_id,
                           session_iter=session_iter, task_code=task_code)

    @tool("Store working memory: intermediate findings during a task; chunked when long.", writes=True)
    def store_working_memory(self, agent_id: Agent, session_id: SessionId, content: Markdown,
                             session_iter: OptionalIteration = None, task_code: Task = None,
                             ctx: Context | None = None) -> CallToolResult:
        return self._store("working_memory", content, ctx, agent_id=agent_id, session_id=session_id,
                           session_iter=session_iter, task_code=task_code)

    @tool("Store a knowledge base entry (not session-scoped, persists across sessions).", writes=True)
    def store_knowledge_base(self, agent_id: Agent, title: Annotated[str, Field(description="Entry title")],
                             content: Markdown,
                             category: Annotated[str | None, Field(description='Category (default "general")')] = None,
                             ctx: Context | None = None) -> CallToolResult:
        return self._store("knowledge_base", content, ctx, agent_id=agent_id, title=title, category=category)
