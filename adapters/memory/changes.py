"""The change log in memory: a change per item each audit entry touches, recorded as the entry is
appended (as the SQL store does in the write's transaction). The fake of the change log's reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from domain.access.rules import NEVER
from domain.changes.model import Change, changes_of
from domain.model import AuditEntry
from domain.validation import epoch


class _Recording(list):
    """The audit list: each entry appended is told to ``record`` too."""

    def __init__(self, record: Callable[[AuditEntry], None]) -> None:
        super().__init__()
        self._record = record

    def append(self, entry: AuditEntry) -> None:  # type: ignore[override]
        super().append(entry)
        self._record(entry)


class InMemoryChangeLog:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.change_log: list[Change] = []
        held = list(self.audit)  # type: ignore[has-type]
        self.audit = _Recording(self._record)
        self.audit.extend(held)

    def changes(self, since: float | None, until: float | None, after: tuple[float, int] | None = None, limit: int = 100,
                kinds: Sequence[str] | None = None, collections: Sequence[str] | None = None,
                conversation_id: str | None = None, source: str | None = None,
                item_ids: Sequence[str] | None = None) -> list[Change]:
        found = [c for c in sorted(self.change_log, key=lambda c: (c.at, c.seq))
                 if (after is None or (c.at, c.seq) > after)
                 and (kinds is None or c.kind in kinds) and (collections is None or c.collection in collections)
                 and (item_ids is None or c.item_id in item_ids)
                 and (since is None or c.at >= since) and (until is None or c.at <= until)
                 and (conversation_id is None or c.conversation_id == conversation_id)
                 and (source is None or c.source == source)]
        return found[:limit]

    def _record(self, entry: AuditEntry) -> None:
        for kind, collection, item_id, detail in changes_of(entry):
            scope, access = self._scope(collection, item_id, entry.actor)
            self.change_log.append(Change(len(self.change_log) + 1, entry.ts, epoch(entry.ts), kind, collection, item_id,
                                          entry.actor,
                                          *scope, access=access, detail=detail))

    def _scope(self, collection: str, item_id: str, actor: str) -> tuple[tuple[Any, Any], dict[str, Any]]:
        item: Any = None
        if collection == "memory":
            item = self.memories.get(item_id)  # type: ignore[attr-defined]
        elif collection == "turn":
            item = self.get_turns([item_id]).get(item_id)  # type: ignore[attr-defined]
        elif collection == "artifact":
            item = self.get_artifact(item_id)  # type: ignore[attr-defined]
        if item is not None:
            scope = (None, item.source_system) if collection == "artifact" else (item.conversation_id, None)
            return scope, {"acl": list(item.acl), "sensitivity": item.sensitivity, "expires_epoch": item.expires_epoch}
        last = next((c for c in reversed(self.change_log) if c.item_id == item_id and c.collection == collection), None)
        if last is not None:
            return (last.conversation_id, last.source), last.access
        return (None, None), {"acl": [f"u:{actor}"], "sensitivity": "normal", "expires_epoch": NEVER}
