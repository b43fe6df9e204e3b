"""Documents toolset (spec 004): project items and canonical documents, context packs, restore bundles.

Spec 004's tool names have dots, which some clients refuse: ``memory.commit`` is ``memory_commit``,
``canonical.upsert`` is ``canonical_upsert`` (and so on), and ``memory.search``, whose underscore form
is core's ``memory_search`` (durable memories), is ``project_search``. Parameters keep spec 004's
camelCase names and defaults. The project is the client's, not the model's: from the roots the client
declares (git remote hashed, else path hashed), else MEMTROVE_PROJECT.
"""

from __future__ import annotations

import weakref
from typing import Annotated, Any

import anyio.from_thread
from loguru import logger
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from adapters import request_scope
from domain.common import denied, utc_now
from domain.errors import ValidationError
from domain.documents.bundles import ContextPack, ProjectSearch, Restore, item_of
from domain.documents.model import DOC_CLASSES, KINDS
from domain.documents.usecases import CommitEntries, ReadCanonical, UpsertCanonical, shown
from domain.ports.documents import ProjectResolver
from entrypoints.mcp import identity, render
from entrypoints.mcp.roots import client_roots, over_http
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool

Key = Annotated[str, Field(description='Canonical key, e.g. "app" or "feature/auth"')]
IdempotencyKey = Annotated[str, Field(description="Unique per change (a UUID): the same key and payload again "
                                                  "return the first result and write nothing")]
Kinds = Annotated[list[str] | None, Field(description="Only these kinds: " + ", ".join(KINDS))]
Version = Annotated[int | None, Field(description="Version number from 1 (default: the newest)")]


class DocumentTools(Toolbox):
    toolset = "documents"

    def project(self, ctx: Context | None) -> str:
        """The client's project, if its caller may work in it (a token may name the projects it allows)."""
        project = self._project(ctx)
        principal = identity.transport_principal(ctx, self.local)
        if not principal.in_project(project):
            denied(self.runtime.app.adapters.store(), request_scope.current(), "use", "project", project,
                   "not among the caller's projects", utc_now())
            allowed = ", ".join(principal.projects or ()) or "none: the server's owner grants projects with " \
                                                              "`memtrove token grant`"
            raise ValidationError("project", f"This caller may not work in project {project!r} (allowed: {allowed})")
        return project

    def _project(self, ctx: Context | None) -> str:
        """From the client's roots (asked once per session), else the configured default."""
        default = self.runtime.settings.memtrove_project
        if ctx is None:
            return default
        cache = self.__dict__.setdefault("_projects", weakref.WeakKeyDictionary())
        session = ctx.session
        if session in cache:
            return cache[session]
        roots = client_roots(ctx)
        # Over HTTP the roots are the client's own paths: never looked up on the server's disk.
        found = self.use(ProjectResolver)().project_of(roots, read_disk=not over_http(ctx)) \
            if roots is not None else None
        cache[session] = found or default
        return cache[session]

    def attach(self, server: Any) -> None:
        from entrypoints.mcp.resources import register_resources

        register_resources(server, self)

    def changed(self, ctx: Context | None) -> None:
        """Tell the client its project's resource list changed (notifications/resources/list_changed)."""
        if ctx is None:
            return
        for send in (ctx.notify_resources_changed, ctx.session.send_resource_list_changed):  # both protocol eras
            try:
                anyio.from_thread.run(send)
            except Exception as exc:  # noqa: BLE001 - a client gone away must not fail the write
                logger.debug("list_changed_not_sent error={}", exc)

    @tool("Commit project memory items (spec, plan, decision, troubleshooting, note); an entry with a "
          "canonicalKey is a new version of that canonical document. Idempotent by idempotencyKey.", writes=True)
    def memory_commit(self, idempotencyKey: IdempotencyKey,
                      entries: Annotated[list[dict[str, Any]], Field(
                          description="1-50 objects: kind, title, content (Markdown), canonicalKey?, tags?")],
                      sessionId: Annotated[str | None, Field(description="The session committing")] = None,
                      ctx: Context | None = None) -> CallToolResult:
        result = self.use(CommitEntries)()(self.project(ctx), idempotencyKey, entries, sessionId)
        self.changed(ctx)
        said = "Replayed" if result["replayed"] else "Committed"
        return render.ok(result, f"{said} {len(result['items'])} items: " + ", ".join(
            f"{i['itemId']} v{i['versionNum']} ({i['status']})" for i in result["items"]))

    @tool("Create or update a canonical document (app spec, feature spec, implementation plan); every "
          "version is kept. Idempotent by idempotencyKey.", writes=True)
    def canonical_upsert(self, canonicalKey: Key,
                         docClass: Annotated[str, Field(description=", ".join(DOC_CLASSES),
                                                        json_schema_extra={"enum": list(DOC_CLASSES)})],
                         title: Annotated[str, Field(description="Title, 1-500 characters")],
                         contentMarkdown: Annotated[str, Field(description="The document, Markdown")],
                         idempotencyKey: IdempotencyKey,
                         tags: Annotated[list[str] | None, Field(description="Tags")] = None,
                         ctx: Context | None = None) -> CallToolResult:
        result = self.use(UpsertCanonical)()(self.project(ctx), canonicalKey, docClass, title, contentMarkdown,
                                             tags, idempotencyKey)
        self.changed(ctx)
        return render.ok(result, f"{canonicalKey}: version {result['versionNum']} ({result['status']}"
                                 f"{', replayed' if result['replayed'] else ''})")

    @tool("A canonical document by key, the newest version or versionNum.", annotations=READ_ONLY)
    def canonical_get(self, canonicalKey: Key, versionNum: Version = None,
                      ctx: Context | None = None) -> CallToolResult:
        version = self.use(ReadCanonical)().version(self.project(ctx), canonicalKey, versionNum)
        return render.ok({**shown(version), "contentMarkdown": version.content}, version.content)

    @tool("The section tree of a canonical document, with each section's anchor.", annotations=READ_ONLY)
    def canonical_outline(self, canonicalKey: Key, versionNum: Version = None,
                          ctx: Context | None = None) -> CallToolResult:
        read = self.use(ReadCanonical)()
        version = read.version(self.project(ctx), canonicalKey, versionNum)
        sections = [s.as_outline() for s in read.outline(version)]
        text = "\n".join(f"{'  ' * max(0, s['level'] - 1)}{s['anchor']}  {s['title']}" for s in sections)
        return render.ok({**shown(version), "sections": sections}, text)

    @tool("The exact text of one section of a canonical document, by its anchor.", annotations=READ_ONLY)
    def canonical_get_section(self, canonicalKey: Key,
                              sectionAnchor: Annotated[str, Field(description="An anchor from canonical_outline")],
                              ctx: Context | None = None) -> CallToolResult:
        version, section, text = self.use(ReadCanonical)().section(self.project(ctx), canonicalKey, sectionAnchor)
        return render.ok({**shown(version), "section": section.as_outline(), "contentMarkdown": text}, text)

    @tool("The sections of a canonical document most relevant to a goal, whole, in document order, within "
          "maxChars; the same input gives the same pack.", annotations=READ_ONLY)
    def canonical_context_pack(self, canonicalKey: Key,
                               goal: Annotated[str, Field(description="What the pack is for")],
                               maxChars: Annotated[int, Field(description="Budget in characters")] = 8000,
                               ctx: Context | None = None) -> CallToolResult:
        version, picked, used = self.use(ContextPack)()(self.project(ctx), canonicalKey, goal, maxChars)
        sections = [{**s.as_outline(), "contentMarkdown": text} for s, text in picked]
        return render.ok({**shown(version), "goal": goal, "maxChars": maxChars, "totalChars": used,
                          "sections": sections}, "\n\n".join(text for _, text in picked) or "No relevant section.")

    @tool("A deterministic bundle to start a session: pinned canonical documents, the latest session "
          "snapshot, recent troubleshooting, then the goal's best matches, within maxItems, maxChars and "
          "maxTokens.", annotations=READ_ONLY)
    def memory_restore(self, goal: Annotated[str | None, Field(description="What the session is about")] = None,
                       kinds: Kinds = None,
                       maxItems: Annotated[int, Field(description="At most this many entries")] = 12,
                       maxChars: Annotated[int, Field(description="Budget in characters")] = 30000,
                       includeCanonical: Annotated[bool, Field(description="Pinned canonical documents")] = True,
                       includeRecentTroubleshooting: Annotated[bool, Field(
                           description="Troubleshooting of the last 30 days (up to 5)")] = True,
                       maxTokens: Annotated[int | None, Field(description="Budget in cl100k tokens")] = None,
                       ctx: Context | None = None) -> CallToolResult:
        bundle = self.use(Restore)()(self.project(ctx), goal, kinds, maxItems, maxChars, includeCanonical,
                                     includeRecentTroubleshooting, maxTokens)
        text = "\n\n".join(f"## {e['title']} ({e['reason']}, {e['kind']} v{e['versionNum']})\n\n{e['content']}"
                           for e in bundle["entries"])
        return render.ok(bundle, text or "Nothing to restore in this project.")

    @tool("Spec 004's memory.search: hybrid search over the project's items (canonical documents boosted).",
          annotations=READ_ONLY)
    def project_search(self, query: Annotated[str, Field(description="Search query, 1-1000 characters")],
                       kinds: Kinds = None,
                       includeArchived: Annotated[bool, Field(description="Also archived items")] = False,
                       limit: Annotated[int, Field(description="Max results, 1-100")] = 20,
                       ctx: Context | None = None) -> CallToolResult:
        found = self.use(ProjectSearch)()(self.project(ctx), query, kinds, includeArchived, limit)
        results = [{"itemId": item_of(p), "kind": p.artifact.labels.get("kind"), "title": p.artifact.title,
                    "canonicalKey": p.artifact.labels.get("canonical_key"),
                    "versionNum": int(p.artifact.labels.get("version_num") or 0),
                    "sectionAnchor": (p.chunk.metadata.get("section_anchor") if p.chunk else None),
                    "text": p.text, "similarity": p.similarity, "score": round(score, 6)} for p, score in found]
        lines = [f"[{r['itemId']}] {r['kind']} {r['title']}: {render.preview(r['text'], 100)}" for r in results]
        return render.ok({"query": query, "count": len(results), "results": results},
                         "\n".join(lines) or "No matches.")
