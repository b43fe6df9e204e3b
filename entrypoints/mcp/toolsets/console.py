"""Console toolset: what people (the ``memtrove`` command line) read that agents rarely need: artifacts
listed page by page, and the store's counts. Off unless asked for (MEMTROVE_TOOLSETS, or a command
line's own connection); both read only what the caller may see."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from domain.access.principal import LOCAL_USER
from domain.artifacts.catalog import ListArtifacts, StoreCounts
from domain.history.listing import ListConversations
from domain.memories.edit import EditMemory, MemoryChange
from domain.model import MEMORY_TYPES
from domain.transfer.usecases import ExportPage, ImportRecords
from domain.model import ARTIFACT_TYPES, Artifact
from domain.upkeep.health import EmbeddingHealth
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool
from entrypoints.mcp.tooling import RetentionDays, VisibleTo


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder`` (files that vanish while it is walked are skipped)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def listed(a: Artifact) -> dict[str, Any]:
    return {"artifact_id": a.id, "version": a.version, "artifact_type": a.artifact_type,
            "source_system": a.source_system, "source_id": a.source_id, "title": a.title, "ts": a.ts,
            "ingested_at": a.ingested_at, "content_hash": a.content_hash, "token_count": a.token_count,
            "num_chunks": a.num_chunks, "owner": a.owner, **render.privacy(a)}


class ConsoleTools(Toolbox):
    toolset = "console"

    @tool("List stored artifacts, newest first, optionally of one source system, type or source id prefix.",
          annotations=READ_ONLY, needs_store=False)
    def artifact_list(
        self,
        source_system: Annotated[str | None, Field(description="Only this source system (up to 500 characters)")] = None,
        artifact_type: Annotated[str | None, Field(description="Only this type: " + ", ".join(ARTIFACT_TYPES),
                                                   json_schema_extra={"enum": [*ARTIFACT_TYPES, None]})] = None,
        source_id_prefix: Annotated[str | None, Field(description="Only source ids starting with this (a folder)")]
        = None,
        limit: Annotated[int, Field(description="Max results, 1-500")] = 50,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page, to read on")] = None,
        mine: Annotated[bool, Field(description="Only the artifacts you wrote (not those shared with you)")] = False,
    ) -> CallToolResult:
        page = self.use(ListArtifacts)()(source_system, artifact_type, source_id_prefix, limit, cursor, mine)
        lines = [f"Found {len(page)} artifacts:",
                 *(f"[{a.id}] {a.artifact_type} {a.source_system}:{a.source_id or '-'} "
                   f"{render.preview(a.title or '', 50)} ({a.num_chunks} chunks, {a.ts})" for a in page)]
        if page.next_cursor:
            lines.append(f"More: call again with cursor={page.next_cursor}")
        return render.ok({"count": len(page), "results": [listed(a) for a in page], "next_cursor": page.next_cursor},
                         "\n".join(lines))

    @tool("What the store holds that you may see (memories by type, conversations and turns, artifacts by "
          "type and source, chunks, oldest and newest), its size on disk, embedding profile and index backlog.",
          annotations=READ_ONLY, needs_store=False)
    def store_stats(self) -> CallToolResult:
        counts = self.use(StoreCounts)()()
        report = {**counts, "embedding": self.use(EmbeddingHealth)()()}
        if "database_bytes" in counts:  # the owner's: the data dir too (the vector index lives there)
            report["data_dir_bytes"] = folder_bytes(self.runtime.settings.memtrove_data_dir)
        memories = sum(counts["memories"].values())
        artifacts = sum(counts["artifacts"]["by_type"].values())
        text = (f"{memories} memories, {counts['conversations']} conversations ({counts['turns']} turns), "
                f"{artifacts} artifacts ({counts['chunks']} chunks); oldest {counts['oldest'] or '-'}, newest "
                f"{counts['newest'] or '-'}")
        return render.ok(report, text + "\n" + render.as_json(report))

    @tool("Export what you stored: a page of records (memtrove's export format, version 1) in the export "
          "order; call again with next_cursor until it is null.", annotations=READ_ONLY, needs_store=False)
    def store_export(
        self,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        limit: Annotated[int, Field(description="Records a page, 1-1000")] = 100,
    ) -> CallToolResult:
        records, next_cursor = self.use(ExportPage)()(cursor, limit)
        more = f"; more: call again with cursor={next_cursor}" if next_cursor else ""
        return render.ok({"count": len(records), "records": records, "next_cursor": next_cursor},
                         f"{len(records)} records{more}")

    @tool("Import records of memtrove's export format (written as yours, their times and privacy kept; one "
          "already stored as it is adds nothing; a memory id you do not hold may be stored under an id of "
          "yours). check=true only validates.", writes=True)
    def store_import(
        self,
        records: Annotated[list[dict[str, Any]], Field(description="1-1000 export records (not the header line)")],
        first_line: Annotated[int, Field(description="Line of the first record in its file, for messages")] = 1,
        check: Annotated[bool, Field(description="Only validate: nothing is written (true or false)")] = False,
        linked: Annotated[list[str] | None, Field(
            description="An import split over calls: ids of memories it sends in its other calls that these "
                        "records' supersedes/superseded_by name (at most 2000)")] = None,
    ) -> CallToolResult:
        counts = self.use(ImportRecords)()(records, first_line, check, linked)
        said = "would add" if check else "added"
        return render.ok(counts, f"{said} {counts['added']}, already stored {counts['unchanged']}")

    @tool("Edit one of your memories in place (its id and time kept): what you give replaces what is "
          "stored; privacy fields left out stay as they are. Re-embedded at once.", writes=True)
    def memory_update(
        self,
        memory_id: Annotated[str, Field(description="Memory ID, starts with 'mem_'")],
        content: Annotated[str | None, Field(description="New content, 1-10000 characters")] = None,
        type: Annotated[str | None, Field(description="New type: " + ", ".join(MEMORY_TYPES),
                                          json_schema_extra={"enum": [*MEMORY_TYPES, None]})] = None,
        confidence: Annotated[float | None, Field(description="New confidence, 0.0-1.0")] = None,
        sensitivity: Annotated[str | None, Field(description="normal, sensitive or highly_sensitive")] = None,
        visibility_scope: Annotated[str | None, Field(description="me, team, org or custom (visible_to)")] = None,
        retention_policy: Annotated[str | None, Field(description="forever, 1y, until_resolved or custom")] = None,
        visible_to: VisibleTo = None,
        retention_days: RetentionDays = None,
    ) -> CallToolResult:
        privacy = {"sensitivity": sensitivity, "visibility_scope": visibility_scope,
                   "retention_policy": retention_policy, "visible_to": visible_to, "retention_days": retention_days}
        edited, changed = self.use(EditMemory)().edit(memory_id, MemoryChange(content, type, confidence, privacy))
        said = (f"Updated memory [{edited.id}] ({', '.join(changed)} changed)" if changed else
                f"Nothing changed: memory [{edited.id}] already holds what was given")
        return render.ok({"id": edited.id, "updated": bool(changed), "changed": changed, "memory_type": edited.type,
                          "confidence": edited.confidence, "ts": edited.ts, **render.privacy(edited)},
                         f"{said}: {render.preview(edited.content)}")

    @tool("List the conversations you may see, by id and owner (history_get's owner): turns, first and last "
          "time, the last turn.",
          annotations=READ_ONLY, needs_store=False)
    def conversation_list(
        self,
        limit: Annotated[int, Field(description="Max conversations, 1-100")] = 25,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page, to read on")] = None,
    ) -> CallToolResult:
        page = self.use(ListConversations)()(limit, cursor)
        rows = [{"conversation_id": c.conversation_id, "owner": c.owner, "turns": c.turns, "first_ts": c.first_ts,
                 "last_ts": c.last_ts, "last_role": c.last.role, "last_content": render.preview(c.last.content, 200)}
                for c in page]
        lines = [f"Found {len(rows)} conversations:",
                 *(f"{r['conversation_id']}{'' if r['owner'] == LOCAL_USER else ' of ' + r['owner']}: {r['turns']} "
                   f"turns, {r['first_ts']} to {r['last_ts']}" for r in rows)]
        if page.next_cursor:
            lines.append(f"More: call again with cursor={page.next_cursor}")
        return render.ok({"count": len(rows), "results": rows, "next_cursor": page.next_cursor}, "\n".join(lines))
