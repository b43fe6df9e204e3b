"""The page's one way into the store: the MCP tools themselves, called in-process as the page's
principal. So a page shows what a tool would answer that caller, with the same checks and messages,
and every call is logged and counted as any tool call is."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from mcp.server.mcpserver.tools import Tool

from domain.access.principal import Principal
from entrypoints.mcp.identity import STATE_KEY, VIA_KEY
from entrypoints.mcp.registry import TOOLSETS, build_tools, toolboxes
from entrypoints.runtime import Runtime


class ToolFailed(Exception):
    """A tool answered with an error: its message (naming the field) and the field, when it names one."""

    def __init__(self, message: str, field: str | None = None, kind: str = "validation_error") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = 404 if kind == "not_found" else 400


class PageContext:
    """What a tool reads of its MCP Context, for a call from the page: the principal (as the HTTP auth
    middleware puts it in the request's state), no client capabilities (so a project is the configured
    default), and notifications that go nowhere (a page has no MCP session to tell)."""

    client_capabilities = None
    request_id = "page"

    def __init__(self, principal: Principal, via: str, answer_when_known: bool = False) -> None:
        request = SimpleNamespace(scope={"state": {STATE_KEY: principal, VIA_KEY: via}})
        # A long call (an ingest) answers once its work is under way and measured, the page then shows
        # its progress (artifact_get), instead of holding the page for the call's whole budget.
        self.answer_when_known = answer_when_known
        self.request_context = SimpleNamespace(request=request)
        self.session = self  # a key of its own for per-session caches

    async def notify_resources_changed(self) -> None:
        return None

    async def send_resource_list_changed(self) -> None:
        return None

    async def report_progress(self, *_: object) -> None:
        return None


class ToolCaller:
    """Every toolset's tools (the page offers what any of them can), by name."""

    def __init__(self, runtime: Runtime) -> None:
        self.tools: dict[str, Tool] = {t.name: t for t in build_tools(toolboxes(runtime, list(TOOLSETS)))}

    async def __call__(self, principal: Principal, name: str, via: str | None = None, answer_when_known: bool = False,
                       **arguments: Any) -> dict[str, Any]:
        """The tool's structured answer; ``ToolFailed`` when it refuses. Arguments left None are not sent.
        ``via``: the token the page's caller signed in with (the page, by its name, else).
        ``answer_when_known``: a long call answers once its work is measured (see PageContext)."""
        sent = {k: v for k, v in arguments.items() if v is not None}
        context = PageContext(principal, f"page ({via})" if via else "page", answer_when_known)
        result = await self.tools[name].run(sent, context, convert_result=True)  # type: ignore[arg-type]
        body = result.structured_content if isinstance(result.structured_content, Mapping) else {}
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content).strip()
            error = body.get("error") if isinstance(body.get("error"), Mapping) else body
            raise ToolFailed(str(error.get("message") or text or "the tool failed"),
                             error.get("field") if isinstance(error.get("field"), str) else None,
                             str(error.get("type") or ""))
        return dict(body)
