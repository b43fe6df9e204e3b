"""In-memory fakes of every port, for unit tests; they pass the same contract suites as the real adapters."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from collections.abc import Mapping

from adapters.memory.outbox import InMemoryVectorOutbox
from adapters.vectors.similarity import cosine, matches
from domain.errors import StorageError
from domain.memories.validity import interval_metadata
from domain.model import AuditEntry, EmbeddingProfile, Memory, Turn, Vector, VectorMatch, VectorRecord
from domain.ports import AuditLog, Embedder, Filter, MetadataStore, Tokenizer, VectorIndex
from domain.validation import epoch

_WORD = re.compile(r"\S+\s*|\s+")


class HashEmbedder(Embedder):
    """Deterministic bag-of-words vectors: texts sharing words are close, no model needed."""

    def __init__(self, dimensions: int = 64, max_tokens: int = 64) -> None:
        self.profile = EmbeddingProfile("fake", "hash-bag-of-words", dimensions, max_tokens)
        self.calls: list[list[str]] = []
        self.fail_after: int | None = None

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        from domain.errors import EmbeddingError

        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise EmbeddingError("Failed to generate embeddings: fake embedder told to fail")
        self.calls.append(list(texts))
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> Vector:
        return self._vector(text)

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2

    def describe(self) -> dict[str, Any]:
        return {"provider": "fake", "model": self.profile.model, "dimensions": self.profile.dimensions,
                "max_tokens": self.profile.max_tokens, "api_key_configured": None}

    def _vector(self, text: str) -> Vector:
        vector = [0.0] * self.profile.dimensions
        for word in re.findall(r"\w+", text.lower()):
            slot = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
            vector[slot % len(vector)] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector] if any(vector) else [1.0 / math.sqrt(len(vector))] * len(vector)


class WordTokenizer(Tokenizer):
    """One token per word with its trailing whitespace (and per leading whitespace run)."""

    name = "words"

    def count(self, text: str) -> int:
        return len(self.token_starts(text))

    def token_starts(self, text: str) -> list[int]:
        return [m.start() for m in _WORD.finditer(text)]


class InMemoryVectorIndex(VectorIndex):
    """Brute-force cosine search over dicts."""

    def __init__(self, profile: EmbeddingProfile) -> None:
        self.profile = profile
        self._data: dict[str, dict[str, VectorRecord]] = {}

    def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        for record in records:
            self._data.setdefault(collection, {})[record.id] = record

    def query(self, collection: str, vector: Vector, limit: int, where: Filter | None = None) -> list[VectorMatch]:
        scored = [VectorMatch(r.id, r.record_id, cosine(vector, r.vector))
                  for r in self._data.get(collection, {}).values() if matches(r.metadata, where)]
        return sorted(scored, key=lambda m: -m.score)[:limit]

    def delete_records(self, collection: str, record_ids: Sequence[str]) -> None:
        doomed = set(record_ids)
        rows = self._data.get(collection, {})
        for vid in [v for v, r in rows.items() if r.record_id in doomed]:
            del rows[vid]

    def delete_vectors(self, collection: str, vector_ids: Sequence[str]) -> None:
        for vid in vector_ids:
            self._data.get(collection, {}).pop(vid, None)

    def delete_where(self, collection: str, where: Filter) -> None:
        rows = self._data.get(collection, {})
        for vid in [v for v, r in rows.items() if matches(r.metadata, where)]:
            del rows[vid]

    def vectors_of(self, collection: str, record_ids: Sequence[str]) -> dict[str, list[str]]:
        wanted = set(record_ids)
        owned: dict[str, list[str]] = {}
        for vid, record in self._data.get(collection, {}).items():
            if record.record_id in wanted:
                owned.setdefault(record.record_id, []).append(vid)
        return owned

    def all_vectors(self, collection: str) -> dict[str, str]:
        return {vid: r.record_id for vid, r in self._data.get(collection, {}).items()}

    def vector_ids(self, collection: str, where: Filter) -> list[str]:
        return [vid for vid, r in self._data.get(collection, {}).items()
                if matches({**r.metadata, "record_id": r.record_id}, where)]

    def drop(self, collection: str) -> None:
        self._data.pop(collection, None)

    def export(self, collection: str, offset: int, limit: int) -> list[VectorRecord]:
        rows = self._data.get(collection, {})
        return [rows[vid] for vid in sorted(rows)[offset:offset + limit]]

    def count(self, collection: str) -> int:
        return len(self._data.get(collection, {}))

    def rebuild(self, collection: str) -> None:
        self._data[collection] = dict(self._data.get(collection, {}))  # brute force has no index to repair

    def storage_bytes(self) -> int:
        return sum(4 * len(r.vector) for rows in self._data.values() for r in rows.values())  # float32s


class InMemoryMetadataStore(InMemoryVectorOutbox, MetadataStore, AuditLog):
    """Dicts standing in for the SQL tables; writes, their vectors and their audit entries land together."""

    def __init__(self) -> None:
        super().__init__()
        self.memories: dict[str, Memory] = {}
        self.turns: dict[tuple[str, str, int], Turn] = {}  # by (owner, conversation id, turn index)
        self.audit: list[AuditEntry] = []
        self.profile: EmbeddingProfile | None = None

    def stored_profile(self) -> EmbeddingProfile | None:
        return self.profile

    def record_profile(self, profile: EmbeddingProfile, replace: bool = True) -> None:
        if replace or self.profile is None:
            self.profile = profile

    def add_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> None:
        self.memories[memory.id] = memory
        self._put("memory", memory.id, vectors)
        self._queue(["memory"], memory.id)
        self.audit.append(entry)

    def replace_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> bool:
        if memory.id not in self.memories:
            return False
        self._drop(["memory"], memory.id)
        self.add_memory(memory, entry, vectors)
        return True

    def supersede_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> str | None:
        old = self.memories.get(memory.supersedes or "")
        if old is None:
            return "missing"
        if old.superseded_by is not None:
            return "superseded"
        if memory.id in self.memories:  # as the SQL store's primary key: nothing written
            raise StorageError(f"Failed to write the metadata store: memory {memory.id} exists")
        ended = replace(old, valid_to=memory.valid_from or memory.ts, superseded_by=memory.id)
        self.memories[old.id] = ended
        self._restamp([ended])  # its vectors say when it held, as its row does: the index is asked for that
        self.add_memory(memory, entry, vectors)
        return None

    def _adopted(self) -> None:
        self._restamp(list(self.memories.values()))  # the adopted vectors may predate a supersession

    def _restamp(self, memories: Sequence[Memory]) -> None:
        """The memories' vectors carry their intervals (queued for the index)."""
        for memory in memories:
            slot = self.stored.get(("memory", memory.id), {})
            for record, pending in list(slot.values()):
                self._put("memory", memory.id, [replace(record, metadata={**record.metadata,
                                                                            **interval_metadata(memory)})], pending)
            if slot:
                self._queue(["memory"], memory.id)

    def get_memories(self, ids: Sequence[str]) -> dict[str, Memory]:
        return {i: self.memories[i] for i in ids if i in self.memories}

    def list_memories(self, type: str | None, limit: int, before: tuple[str, str] | None = None) -> list[Memory]:
        rows = [m for m in self.memories.values() if type in (None, m.type)]
        rows = sorted(rows, key=lambda m: (epoch(m.ts), m.id), reverse=True)
        if before is not None:
            rows = [m for m in rows if (epoch(m.ts), m.id) < (epoch(before[0]), before[1])]
        return rows[:limit]

    def delete_memory(self, memory_id: str, entry: AuditEntry) -> bool:
        if self.memories.pop(memory_id, None) is None:
            return False
        self._drop(["memory"], memory_id)
        self._queue(["memory"], memory_id)
        self.audit.append(entry)
        return True

    def memory_ids(self) -> set[str]:
        return set(self.memories)

    def expired_items(self, collection: str, now: float, limit: int) -> list[str]:
        items = {"memory": self.memories, "history": self.turns}[collection].values()
        return [i.id for i in sorted((i for i in items if i.expires_epoch <= now),
                                     key=lambda i: (i.expires_epoch, i.id))][:limit]

    def delete_turn(self, turn_id: str, entry: AuditEntry) -> bool:
        found = [key for key, turn in self.turns.items() if turn.id == turn_id]
        if not found:
            return False
        del self.turns[found[0]]
        self._drop(["history", "history_context"], turn_id)
        self._queue(["history", "history_context"], turn_id)
        owner, conversation, index = found[0]
        after = self.turns.get((owner, conversation, index + 1))
        if after is not None:  # it was read after this one: now read alone (its own vectors)
            self.replace_vectors("history_context", after.id,
                                 [r for r, _ in self.stored.get(("history", after.id), {}).values()])
        self.audit.append(entry)
        return True

    def put_turn(self, turn: Turn, entry: AuditEntry,
                 vectors: Mapping[str, Sequence[VectorRecord]] | None = None) -> None:
        self.turns[(turn.owner, turn.conversation_id, turn.turn_index)] = turn
        for collection, records in (vectors or {}).items():
            self.replace_vectors(collection, turn.id, records)
        self.audit.append(entry)

    def replace_vectors(self, collection: str, owner: str, records: Sequence[VectorRecord]) -> None:
        self._drop([collection], owner)
        self._put(collection, owner, records)
        self._queue([collection], owner)

    def get_turn(self, owner: str, conversation_id: str, turn_index: int) -> Turn | None:
        return self.turns.get((owner, conversation_id, turn_index))

    def get_turns(self, ids: Sequence[str]) -> dict[str, Turn]:
        wanted = set(ids)
        return {t.id: t for t in self.turns.values() if t.id in wanted}

    def recent_turns(self, owner: str, conversation_id: str, limit: int, before: int | None = None) -> list[Turn]:
        rows = sorted((t for t in self.turns.values() if t.owner == owner and t.conversation_id == conversation_id
                       and (before is None or t.turn_index < before)), key=lambda t: t.turn_index)
        return rows[-limit:]

    def turns_in_order(self, after: tuple[str, str, int] | None, limit: int) -> list[Turn]:
        rows = sorted(self.turns.values(), key=lambda t: (t.conversation_id, t.owner, t.turn_index))
        return [t for t in rows if after is None or (t.conversation_id, t.owner, t.turn_index) > tuple(after)][:limit]

    def turn_hashes(self) -> dict[str, str]:
        return {t.id: t.content_hash for t in self.turns.values()}

    def append(self, entry: AuditEntry) -> None:
        self.audit.append(entry)

    def recent(self, limit: int) -> list[AuditEntry]:
        return list(reversed(self.audit))[:limit]
