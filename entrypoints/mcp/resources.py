"""Spec 004 Part 5's resources: the project's items and canonical documents, browsable and readable.

``resources/list`` pages through the client's project's active items (pinned first, then most
recently updated); templates read ``memtrove://items/{item_id}``, ``memtrove://canonical/{+key}``
and one section, ``memtrove://section/{anchor}/{+key}``, as Markdown. The documents toolset tells
clients ``notifications/resources/list_changed`` after each write.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import anyio.to_thread
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import ListResourcesResult, PaginatedRequestParams, Resource

from domain.errors import MemtroveError
from domain.documents.usecases import ReadCanonical
from domain.ports.documents import DocumentStore
from entrypoints.runtime import Runtime

T = TypeVar("T")


class ProjectTools(Protocol):
    """What the resources need of the documents toolset: the client's project and its use cases."""

    runtime: Runtime

    def project(self, ctx: Context | None) -> str: ...

    def use(self, kind: type[T]) -> Callable[..., T]: ...


PAGE = 50
MARKDOWN = "text/markdown"


class MemtroveServer(MCPServer):
    """An MCPServer whose resource list is read from the store, per client project, page by page."""

    documents: ProjectTools | None = None

    async def _handle_list_resources(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        if self.documents is None:
            return await super()._handle_list_resources(ctx, params)
        tools = self.documents
        try:
            project = await anyio.to_thread.run_sync(
                lambda: tools.project(Context(request_context=ctx, mcp_server=self)))
        except MemtroveError:  # a caller outside the client's project: it sees no resources there
            return ListResourcesResult(resources=[], next_cursor=None)
        cursor = params.cursor if params is not None else None
        offset = int(cursor) if cursor and re.fullmatch(r"[0-9]{1,9}", cursor) else 0
        store: DocumentStore = tools.runtime.app.adapters.store()
        items = await anyio.to_thread.run_sync(lambda: store.latest_items(project, limit=offset + PAGE + 1))
        page = items[offset:offset + PAGE]
        resources = [Resource(uri=f"memtrove://items/{v.item_id}", name=v.title, mime_type=MARKDOWN,
                              description=f"{v.kind}" + (f" ({v.canonical_key})" if v.canonical_key else "") +
                              f", version {v.version_num}, {v.created_at}") for v in page]
        more = len(items) > offset + PAGE
        return ListResourcesResult(resources=resources, next_cursor=str(offset + PAGE) if more else None)


def announce_list_changes(server: MCPServer) -> None:
    """Declare ``resources.listChanged`` in the handshake's capabilities, since the documents toolset
    sends the notification. The SDK takes it only as an argument at handshake time, from every
    transport's own call, so the low-level server turns it on here once, whatever the call passes."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK offers no public way to set the default)
    plain = lowlevel.get_capabilities

    def capabilities(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
        given = notification_options or NotificationOptions()
        return plain(NotificationOptions(prompts_changed=given.prompts_changed, resources_changed=True,
                                         tools_changed=given.tools_changed), *args, **kwargs)

    lowlevel.get_capabilities = capabilities  # type: ignore[method-assign]


def register_resources(server: MemtroveServer, tools: ProjectTools) -> None:
    server.documents = tools
    announce_list_changes(server)

    def readable(action: Any) -> Any:
        try:
            return action()
        except MemtroveError as exc:
            raise ResourceError(exc.message) from exc

    @server.resource("memtrove://items/{item_id}", name="item", mime_type=MARKDOWN,
                     description="A project item's current version, Markdown")
    async def item(item_id: str, ctx: Context) -> str:
        project = await anyio.to_thread.run_sync(lambda: readable(lambda: tools.project(ctx)))
        store: DocumentStore = tools.runtime.app.adapters.store()
        found = await anyio.to_thread.run_sync(lambda: store.item_version(project, item_id))
        if found is None:
            raise ResourceError(f"No item {item_id} in this project")
        return found.content

    @server.resource("memtrove://canonical/{+key}", name="canonical", mime_type=MARKDOWN,
                     description="A canonical document's newest version, Markdown")
    async def canonical(key: str, ctx: Context) -> str:
        project = await anyio.to_thread.run_sync(lambda: readable(lambda: tools.project(ctx)))
        read = tools.use(ReadCanonical)()
        return await anyio.to_thread.run_sync(lambda: readable(lambda: read.version(project, key).content))

    @server.resource("memtrove://section/{anchor}/{+key}", name="canonical-section", mime_type=MARKDOWN,
                     description="One section of a canonical document by its anchor, exact Markdown")
    async def section(anchor: str, key: str, ctx: Context) -> str:
        project = await anyio.to_thread.run_sync(lambda: readable(lambda: tools.project(ctx)))
        read = tools.use(ReadCanonical)()
        return await anyio.to_thread.run_sync(lambda: readable(lambda: read.section(project, key, anchor)[2]))
