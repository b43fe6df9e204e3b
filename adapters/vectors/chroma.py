"""Chroma as the vector index: one collection per (kind, embedding profile), our own vectors only."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from domain.errors import StorageError
from domain.ids import artifact_of, record_of
from domain.model import EmbeddingProfile, Vector, VectorMatch, VectorRecord
from domain.ports import Filter, VectorIndex
from domain.upkeep.vector_sync import filtered_fields, owner_field

_PAGE = 5_000
# chromadb's upsert holds the GIL for its whole batch (2.1 s for 1,135 vectors into a 100k collection):
# small pages let searches and tool calls of the same process run in between.
_UPSERT_PAGE = 256


class ChromaVectorIndex(VectorIndex):
    """Embedded ``PersistentClient`` by default, ``HttpClient`` when a host is given.

    Vectors of different profiles live in differently named collections, so they are never
    compared. Every add and query passes embeddings: Chroma's own embedder is never invoked.
    """

    filters_cheaply = False  # its metadata filter scans: see VectorIndex.filters_cheaply

    def __init__(self, profile: EmbeddingProfile, path: str | None = None,
                 host: str | None = None, port: int = 8000) -> None:
        self.profile = profile
        self._path, self._host, self._port = path, host, port
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()

    def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        col = self._collection(collection)
        for start in range(0, len(records), _UPSERT_PAGE):
            page = records[start:start + _UPSERT_PAGE]
            self._call(lambda: col.upsert(
                ids=[r.id for r in page],
                embeddings=[r.vector for r in page],
                # Only what it is asked to filter on: 6 rows a chunk where it kept 12 (1.2 KB of 1.5 KB a chunk).
                metadatas=[_clean(filtered_fields(collection, {**r.metadata, "record_id": r.record_id})) or None
                           for r in page],
            ), "store vectors")

    def query(self, collection: str, vector: Vector, limit: int, where: Filter | None = None) -> list[VectorMatch]:
        col = self._collection(collection)
        answer = self._call(lambda: col.query(
            query_embeddings=[vector], n_results=limit, where=_where(where) or None,
            include=["distances"],  # the ids name their records: no metadata to read (a third of a query)
        ), "search vectors")
        return [VectorMatch(id=i, record_id=record_of(i), score=1.0 - float(d))
                for i, d in zip(answer["ids"][0], answer["distances"][0], strict=True)]

    def delete_records(self, collection: str, record_ids: Sequence[str]) -> None:
        self.delete_vectors(collection, [v for vs in self.vectors_of(collection, record_ids).values() for v in vs])

    def delete_vectors(self, collection: str, vector_ids: Sequence[str]) -> None:
        if vector_ids:
            col = self._collection(collection)
            self._call(lambda: col.delete(ids=list(vector_ids)), "delete vectors")

    def delete_where(self, collection: str, where: Filter) -> None:
        col = self._collection(collection)
        self._call(lambda: col.delete(where=_where(where)), "delete vectors")

    def vectors_of(self, collection: str, record_ids: Sequence[str]) -> dict[str, list[str]]:
        if not record_ids:
            return {}
        col = self._collection(collection)
        field = owner_field(collection)  # a chunk's vectors keep their artifact's id, not their own
        owners = {artifact_of(r) for r in record_ids} if field == "artifact_id" else set(record_ids)
        got = self._call(lambda: col.get(where={field: {"$in": sorted(owners)}}, include=[]), "read vectors")
        wanted = set(record_ids)
        owned: dict[str, list[str]] = {}
        for vid in got["ids"]:
            if record_of(vid) in wanted:
                owned.setdefault(record_of(vid), []).append(vid)
        return owned

    def all_vectors(self, collection: str) -> dict[str, str]:
        col = self._collection(collection)
        owners: dict[str, str] = {}
        offset = 0
        while True:
            got = self._call(lambda: col.get(include=["metadatas"], limit=_PAGE, offset=offset), "read vectors")
            for vid, meta in zip(got["ids"], got["metadatas"], strict=True):
                owners[vid] = str((meta or {}).get("record_id") or record_of(vid))
            if len(got["ids"]) < _PAGE:
                return owners
            offset += _PAGE

    def vector_ids(self, collection: str, where: Filter) -> list[str]:
        col = self._collection(collection)
        got = self._call(lambda: col.get(where=_where(where), include=[]), "read vectors")
        return list(got["ids"])

    def export(self, collection: str, offset: int, limit: int) -> list[VectorRecord]:
        col = self._collection(collection)
        got = self._call(lambda: col.get(include=["embeddings", "metadatas"], limit=limit, offset=offset),
                         "read vectors")
        return [VectorRecord(vid, str((meta or {}).get("record_id") or record_of(vid)), [float(x) for x in vector],
                             {k: v for k, v in (meta or {}).items() if k != "record_id"})
                for vid, vector, meta in zip(got["ids"], got["embeddings"], got["metadatas"], strict=True)]

    def drop(self, collection: str) -> None:
        client = self._connect()
        with self._lock:
            self._call(lambda: _drop(client, self.collection_name(collection)), "drop a collection")
            self._collections.pop(collection, None)

    def count(self, collection: str) -> int:
        col = self._collection(collection)
        return int(self._call(col.count, "count vectors"))

    def rebuild(self, collection: str) -> None:
        """Copy every vector into a fresh collection and swap it in.

        Chroma 1.5.9's HNSW can lose live records from query() after deletes and upserts while get()
        still returns them (chroma-core/chroma#7758); a collection built by inserts alone is whole.
        A crash mid-way leaves the old collection (or, after its deletion, the full copy, which
        ``_collection`` renames into place on the next open).
        """
        name, spare = self.collection_name(collection), self._spare_name(collection)
        client = self._connect()
        old = self._collection(collection)
        self._call(lambda: _drop(client, spare), "rebuild the index")
        fresh = self._call(lambda: client.create_collection(
            spare, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
            metadata={"kind": collection, **self.profile.as_metadata()}), "rebuild the index")
        offset = 0
        while True:
            page = self._call(lambda: old.get(include=["embeddings", "metadatas"], limit=_PAGE, offset=offset),
                              "rebuild the index")
            if len(page["ids"]):
                self._call(lambda: fresh.add(ids=page["ids"], embeddings=page["embeddings"],
                                             metadatas=page["metadatas"]), "rebuild the index")
            if len(page["ids"]) < _PAGE:
                break
            offset += _PAGE
        with self._lock:
            self._call(lambda: client.delete_collection(name), "rebuild the index")
            self._call(lambda: fresh.modify(name=name), "rebuild the index")
            self._collections[collection] = fresh

    def storage_bytes(self) -> int:
        if self._host or not self._path:  # a server's disk is not ours to measure
            return 0
        total = 0
        for folder, _, files in os.walk(self._path):
            for name in files:
                with contextlib.suppress(OSError):  # a file Chroma removes while we walk
                    total += os.path.getsize(os.path.join(folder, name))
        return total

    def _spare_name(self, collection: str) -> str:
        return f"rebuild__{self.collection_name(collection)}"[:63]

    def collection_name(self, collection: str) -> str:
        return f"{collection}__{self.profile.key}"[:63]

    def _collection(self, collection: str) -> Any:
        found = self._collections.get(collection)
        if found is not None:
            return found
        with self._lock:
            if collection not in self._collections:
                client = self._connect()
                self._finish_rebuild(client, collection)
                self._collections[collection] = self._call(lambda: client.get_or_create_collection(
                    self.collection_name(collection),
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"kind": collection, **self.profile.as_metadata()},
                ), "open collection")
            return self._collections[collection]

    def _finish_rebuild(self, client: Any, collection: str) -> None:
        """A rebuild killed after dropping the old collection left the full copy: put it in place."""
        names = {c if isinstance(c, str) else c.name for c in self._call(client.list_collections, "open collection")}
        spare = self._spare_name(collection)
        if spare in names and self.collection_name(collection) not in names:
            self._call(lambda: client.get_collection(spare).modify(name=self.collection_name(collection)),
                       "finish an interrupted rebuild")
        elif spare in names:
            self._call(lambda: client.delete_collection(spare), "drop an unfinished rebuild")

    def _connect(self) -> Any:
        if self._client is None:
            import chromadb
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=False)
            if self._host:
                try:
                    self._client = chromadb.HttpClient(host=self._host, port=self._port, settings=settings)
                except Exception as exc:
                    raise StorageError(
                        f"Cannot connect to ChromaDB at {self._host}:{self._port}. Ensure ChromaDB is running."
                    ) from exc
            else:
                self._client = self._call(lambda: chromadb.PersistentClient(path=self._path, settings=settings),
                                          "open the embedded Chroma store")
        return self._client

    def _call(self, action: Callable[[], Any], what: str) -> Any:
        try:
            return action()
        except StorageError:
            raise
        except Exception as exc:
            if "does not exist" in str(exc):
                # Another process rebuilt (dropped and re-created) the collection: the next call
                # opens it afresh instead of failing on the old handle for ever.
                with self._lock:
                    self._collections.clear()
            where = f"{self._host}:{self._port}" if self._host else self._path
            raise StorageError(f"Failed to {what} in ChromaDB ({where}): {exc}") from exc


def _clean(metadata: dict[str, Any]) -> dict[str, Any]:
    # Chroma metadata values must be str, int, float or bool; None means "absent".
    return {k: v for k, v in metadata.items() if v is not None}


def _where(where: Filter | None) -> dict[str, Any] | None:
    if not where:
        return None
    # Chroma takes one operator per expression: {"ts": {"$gte": a, "$lte": b}} becomes two clauses;
    # "$or" takes two or more (one alone is itself).
    clauses = [{field: {op: value}} for field, cond in where.items() if field != "$or"
               for op, value in (cond.items() if isinstance(cond, dict) else [("$eq", cond)])]
    if "$or" in where:
        either = [w for w in (_where(sub) for sub in where["$or"]) if w is not None]
        clauses.append(either[0] if len(either) == 1 else {"$or": either})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _drop(client: Any, name: str) -> None:
    try:
        client.delete_collection(name)
    except Exception:  # noqa: BLE001 - absent is what we want
        pass
