"""Export and import: what a caller stored, page by page out of the store, and back in.

``ExportPage`` reads the caller's own records (those it wrote) in the export order (domain/transfer/records.py),
one page a call, a cursor naming where the next starts: so an export of any size streams. Project
documents (spec 004) are exported as every version of each item of the caller's projects; their
artifacts (source system ``documents``, views of the current versions) are left out, and an import
writes the versions back and makes their artifacts again.

``ImportRecords`` takes a batch of records: with ``check`` it only validates them (nothing written),
naming the line and the field of the first bad one; else it writes each as its writer's, the caller
(a record's time and privacy kept): a memory under its id or one of the caller's (owned.py), its
supersession links checked with the batch, the store and the import's other calls (links.py), a turn
at its place, an artifact cut again by its chunker. A record already there as it is adds nothing (import a file
twice: nothing new); one there with other content or privacy is refused, never overwritten; one whose
retention ran out since it was written is left out (counted as expired).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from domain.access.principal import Identity
from domain.access.rules import access_fields, access_filter, visible
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.usecases import read_whole, reconstruct
from domain.documents.model import SOURCE as DOCUMENTS
from domain.errors import ValidationError
from domain.history.usecases import AppendTurn
from domain.common import apply_policies
from domain.memories.usecases import StoreMemory, memory_hit
from domain.model import Hit, RequestContext
from domain.paging import decode_cursor, encode_cursor
from domain.ports import ArtifactScopes, MetadataStore, PrivacyPolicy
from domain.documents.usecases import ItemWriter
from domain.ports.documents import DocumentStore
from domain.ports.graph import GraphStore
from domain.transfer.records import (
    KINDS, artifact_record, document_record, entity_record, memory_record, relation_record, turn_record,
)
from domain.transfer.owned import import_ids
from domain.transfer.fields import LINKS
from domain.transfer.restore import Restorer
from domain.ids import MEMORY_ID
from domain.validation import epoch, require_id, require_int

CURSOR = "export"
MAX_LINKED = 2000  # two links for each of a call's 1000 records


@dataclass(frozen=True, slots=True)
class ExportPage:
    """The caller's own records (those it wrote: an item another shares with it is its writer's to
    export), privacy policies applied as on every read; then the versions of its projects' documents."""

    store: MetadataStore
    scopes: ArtifactScopes
    documents: DocumentStore
    graph: GraphStore
    policies: Sequence[PrivacyPolicy] = ()
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, cursor: object = None, limit: object = 100) -> tuple[list[dict[str, Any]], str | None]:
        count = require_int("limit", limit, 1, 1000)
        position = decode_cursor(cursor, CURSOR) or [0, None]
        if len(position) != 2 or not isinstance(position[0], int) or not 0 <= position[0] < len(KINDS):
            raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
        context, now = self.identity(), self.now()
        kind, after = position
        records: list[dict[str, Any]] = []
        while kind < len(KINDS) and len(records) < count:
            walk = (self._memories, self._turns, self._artifacts, self._documents, self._entities,
                    self._relations)[kind]
            page, after = walk(after, count - len(records), context, now)
            records += page
            if after is None:
                kind += 1
        return records, encode_cursor(CURSOR, [kind, after]) if kind < len(KINDS) else None

    def _mine(self, item: Any, context: RequestContext, now: float) -> bool:
        return item.owner == context.principal.user_id and visible(access_fields(item), context, now)

    def _allowed(self, hits: list[Hit], context: RequestContext) -> set[str]:
        return {h.id for h in apply_policies(self.policies, hits, context)}

    def _walk(self, fetch: Callable[[Any], list[Any]], place: Callable[[Any], tuple[Any, ...]],
              hit: Callable[[Any], Hit], record: Callable[[Any], dict[str, Any]], position: Any, count: int,
              context: RequestContext, now: float) -> tuple[list[dict], Any]:
        """Batches of ``count`` from ``position`` until one holds a record of the caller's (or none is
        left): its records, and the position after the batch (None at the end)."""
        while True:
            batch = fetch(position)
            mine = [item for item in batch if self._mine(item, context, now)]
            allowed = self._allowed([hit(item) for item in mine], context)
            found = [record(item) for item in mine if item.id in allowed]
            if len(batch) < count:
                return found, None
            position = place(batch[-1])
            if found:
                return found, list(position)

    def _memories(self, after: Any, count: int, context: RequestContext, now: float) -> tuple[list[dict], Any]:
        found, position = self._walk(lambda before: self.store.list_memories(None, count, before),  # type: ignore[arg-type]
                                     lambda m: (m.ts, m.id), lambda m: memory_hit(m, None), memory_record,
                                     tuple(after) if after else None, count, context, now)
        return self._paired(found, context, now), position

    def _paired(self, records: list[dict[str, Any]], context: RequestContext, now: float) -> list[dict[str, Any]]:
        """The records with only the links an import takes (domain/transfer/links.py): to a memory this
        export holds too, which names this one back. A link to one deleted, expired or withheld is left
        out (its valid_to stays: it ended then); so what an export writes, an import takes."""
        on_page = {r["id"]: r for r in records}
        named = {r[n] for r in records for n in LINKS if r.get(n)} - set(on_page)
        held = [m for m in self.store.get_memories(sorted(named)).values() if self._mine(m, context, now)]
        allowed = self._allowed([memory_hit(m, None) for m in held], context)
        partners = {**{m.id: memory_record(m) for m in held if m.id in allowed}, **on_page}
        def kept(record: dict[str, Any], name: str, back: str) -> bool:
            partner = partners.get(record[name])
            return partner is not None and partner.get(back) == record["id"] != record[name] and \
                record.get("supersedes") != record.get("superseded_by")  # two replacing each other: neither

        dropped = [(r, name) for r in records for name, back in (LINKS, LINKS[::-1])
                   if r.get(name) and not kept(r, name, back)]
        for record, name in dropped:
            del record[name]
        return records

    def _turns(self, after: Any, count: int, context: RequestContext, now: float) -> tuple[list[dict], Any]:
        if after is not None and (not isinstance(after, list) or len(after) != 3):  # a cursor of an older version
            raise ValidationError("cursor", "Invalid cursor: it was made by an older memtrove (turns are each "
                                            "owner's own now): start the export again without a cursor")
        return self._walk(lambda position: self.store.turns_in_order(position, count),
                          lambda t: (t.conversation_id, t.owner, t.turn_index),
                          lambda t: Hit(id=t.id, type="history", score=0.0, content=t.content,
                                        fields={"conversation_id": t.conversation_id, "role": t.role}),
                          turn_record, (str(after[0]), str(after[1]), int(after[2])) if after else None, count,
                          context, now)

    def _artifacts(self, after: Any, count: int, context: RequestContext, now: float) -> tuple[list[dict], Any]:
        rule = access_filter(context, now)
        before = (float(after[0]), str(after[1])) if after else None
        listed = self.scopes.find_artifacts({"owner": context.principal.user_id}, rule, count + 1, before)
        found = []
        for a in listed[:count]:
            if a.source_system == DOCUMENTS:
                continue
            artifact, chunks = read_whole(self.store, a.id)  # type: ignore[arg-type]
            if artifact is None:
                continue  # deleted since it was listed
            content = reconstruct(chunks) if artifact.is_chunked else artifact.content or ""
            found.append(artifact_record(artifact, content))
        last = listed[count - 1] if len(listed) > count else None
        return found, ([epoch(last.ts), last.id] if last else None)

    def _entities(self, after: Any, count: int, context: RequestContext, now: float) -> tuple[list[dict], Any]:
        offset = int(after or 0)
        page = self.graph.entities(context.actor, after=offset, limit=count)
        return [entity_record(e) for e in page], (offset + len(page) if len(page) == count else None)

    def _relations(self, after: Any, count: int, context: RequestContext, now: float) -> tuple[list[dict], Any]:
        offset = int(after or 0)
        page = self.graph.relations(context.actor)[offset:offset + count]
        return [relation_record(r) for r in page], (offset + len(page) if len(page) == count else None)

    def _documents(self, after: Any, count: int, context: RequestContext, now: float) -> tuple[list[dict], Any]:
        position = (str(after[0]), str(after[1]), int(after[2])) if after else None
        while True:  # batches until one holds a version of the caller's projects (or none is left)
            batch = self.documents.versions_in_order(position, count)
            found = [document_record(v) for v in batch if context.principal.in_project(v.project)]
            if len(batch) < count:
                return found, None
            last = batch[-1]
            position = (last.project, last.item_id, last.version_num)
            if found:
                return found, list(position)


@dataclass(frozen=True, slots=True)
class ImportRecords:
    store: MetadataStore
    scopes: ArtifactScopes
    store_memory: StoreMemory
    append_turn: AppendTurn
    ingest: IngestArtifact
    documents: DocumentStore
    writer: ItemWriter
    graph: GraphStore
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, records: object, first_line: object = 1, check: object = False,
                 linked: object = None) -> dict[str, int]:
        """``linked``: ids of memories the same import sends in its other calls that these records' links
        name (domain/transfer/links.py): taken as coming, their pairs checked by whoever splits the import."""
        if not isinstance(records, list) or not records or len(records) > 1000:
            raise ValidationError("records", "records must be a list of 1-1000 export records")
        line = require_int("first_line", first_line, 1)
        if not isinstance(check, bool):
            raise ValidationError("check", f"check must be true or false (got {check!r})")
        coming = pending_ids(linked)
        context = self.identity()
        named = [r.get(n) for r in records if isinstance(r, dict) and r.get("kind") == "memory"
                 for n in ("id", *LINKS)]
        ids = import_ids(self.store, context.actor, [*named, *coming])
        restorer = Restorer(self.store, self.scopes, self.store_memory, self.append_turn, self.ingest,
                            self.documents, self.writer, self.graph, context, self.now(), ids)
        planned = [restorer.plan(record, line + n) for n, record in enumerate(records)]
        restorer.check_links({ids[m] for m in coming})
        counts = {"added": 0, "unchanged": 0, "expired": 0}
        for step in planned:
            if step.write is None or check:
                counts["added" if step.status == "new" else step.status] += 1
            else:
                counts["added" if step.write() else "unchanged"] += 1
        return counts


def pending_ids(linked: object) -> list[str]:
    if linked is None:
        return []
    if not isinstance(linked, list) or len(linked) > MAX_LINKED:
        raise ValidationError("linked", f"linked must be a list of at most {MAX_LINKED} memory ids")
    return [require_id("linked", m, "mem_", MEMORY_ID, "32 hex characters") for m in linked]
