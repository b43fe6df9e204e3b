"""Chroma as the vector index: one collection per (kind, embedding profile), our own vectors only."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from loguru import logger

from domain.errors import StorageError
from domain.ids import artifact_of, record_of
from domain.model import EmbeddingProfile, Vector, VectorMatch, VectorRecord
from domain.ports import Filter, VectorIndex
from adapters.vectors.chroma_filters import METADATA_REWRITTEN, metadatas_of, where_of
from adapters.vectors.open_files import raise_open_files_limit
from domain.upkeep.vector_sync import owner_field

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
                 host: str | None = None, port: int = 8000, source: Source | None = None) -> None:
        """``source``: the store's copy of this profile's vectors (collection, after id, limit -> a page by
        id); a collection whose HNSW files are lost or damaged is rebuilt from it, without embedding."""
        self.profile = profile
        self._path, self._host, self._port = path, host, port
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._source = source
        self._restoring = threading.Lock()
        self._restored: dict[str, int] = {}  # collection -> how many times it was rebuilt from the source

    def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        for start in range(0, len(records), _UPSERT_PAGE):
            page = records[start:start + _UPSERT_PAGE]
            self._on(collection, lambda col: _put(col, collection, page), "store vectors")

    def query(self, collection: str, vector: Vector, limit: int, where: Filter | None = None) -> list[VectorMatch]:
        answer = self._on(collection, lambda col: col.query(
            query_embeddings=[vector], n_results=limit, where=where_of(where) or None,
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
        self._call(lambda: col.delete(where=where_of(where)), "delete vectors")

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
        got = self._call(lambda: col.get(where=where_of(where), include=[]), "read vectors")
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
        old = self._collection(collection)

        def pages() -> Iterator[tuple[list[str], Any, Any]]:
            offset = 0
            while True:
                page = self._call(lambda: old.get(include=["embeddings", "metadatas"], limit=_PAGE, offset=offset),
                                  "rebuild the index")
                yield page["ids"], page["embeddings"], page["metadatas"]
                if len(page["ids"]) < _PAGE:
                    return
                offset += _PAGE
        self._refill(collection, pages())

    def restore(self, collection: str) -> None:
        """Rebuild the collection from the store's copy of its vectors (its HNSW files are unreadable)."""
        source = self._source
        if source is None:
            raise StorageError(f"The {collection} vector index is damaged and this index has no copy to rebuild "
                               "it from: run `memtrove doctor --rebuild-vectors`")
        logger.warning("Chroma's {} collection cannot be read (its HNSW files are lost or damaged): "
                       "rebuilding it from the store's copy of its vectors", collection)

        def pages() -> Iterator[tuple[list[str], Any, Any]]:
            after = ""
            while records := list(source(collection, after, _PAGE)):
                yield [r.id for r in records], [r.vector for r in records], metadatas_of(collection, records)
                after = records[-1].id
        self._refill(collection, pages())

    def _refill(self, collection: str, pages: Iterator[tuple[list[str], Any, Any]]) -> None:
        """A fresh spare collection filled page by page, then swapped in for the collection."""
        name, spare = self.collection_name(collection), self._spare_name(collection)
        client = self._connect()
        self._call(lambda: _drop(client, spare), "rebuild the index")
        fresh = self._call(lambda: client.create_collection(
            spare, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
            metadata={"kind": collection, **self.profile.as_metadata()}), "rebuild the index")
        for ids, embeddings, metas in pages:
            for at in range(0, len(ids), _UPSERT_PAGE):
                end = at + _UPSERT_PAGE
                self._call(lambda: fresh.add(ids=ids[at:end], embeddings=embeddings[at:end], metadatas=metas[at:end]),
                           "rebuild the index")
        with self._lock:
            self._call(lambda: _drop(client, name), "rebuild the index")
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
                raise_open_files_limit()  # before Chroma sizes its index cache from it: see open_files.py
                self._client = self._call(lambda: chromadb.PersistentClient(path=self._path, settings=settings),
                                          "open the embedded Chroma store")
        return self._client

    def _on(self, collection: str, action: Callable[[Any], Any], what: str) -> Any:
        """``action`` on the collection; once more after rebuilding it from the store's copy when its HNSW
        files cannot be read (lost or damaged: a disk, a copy, a kill at the wrong moment)."""
        seen = self._restored.get(collection, 0)
        try:
            return self._call(lambda: action(self._collection(collection)), what)
        except _Damaged:
            with self._restoring:  # one rebuild; callers that met the damage meanwhile wait for it
                if self._restored.get(collection, 0) == seen:
                    self.restore(collection)
                    self._restored[collection] = seen + 1
            return self._call(lambda: action(self._collection(collection)), what)

    def _call(self, action: Callable[[], Any], what: str) -> Any:
        try:
            return action()
        except StorageError:
            raise
        except Exception as exc:
            if any(sign in str(exc) for sign in _DAMAGED):
                raise _Damaged(f"Failed to {what} in ChromaDB ({self._path}): {exc}") from exc
            if "does not exist" in str(exc):
                # Another process rebuilt (dropped and re-created) the collection: the next call
                # opens it afresh instead of failing on the old handle for ever.
                with self._lock:
                    self._collections.clear()
            where = f"{self._host}:{self._port}" if self._host else self._path
            raise StorageError(f"Failed to {what} in ChromaDB ({where}): {exc}") from exc


Source = Callable[[str, str, int], Sequence[VectorRecord]]
# What Chroma 1.5.9 says when a collection's HNSW segment cannot be loaded from its files.
_DAMAGED = ("hnsw segment reader", "hnsw segment writer", "Error loading hnsw index", "Nothing found on disk")


class _Damaged(StorageError):
    """The collection's HNSW files cannot be read."""


def _put(col: Any, collection: str, page: Sequence[VectorRecord]) -> None:
    """Upsert a page; in a collection whose vectors' metadata change after they are written (a memory's
    interval ends when it is superseded), a vector stored already with the same embedding gets its metadata
    only: upserting it again into Chroma 1.5.9's HNSW loses other live records from query() (chroma#7758:
    3 of 5 stores of 4 memories superseded 160 times each lost one for good; none of 5 with this)."""
    kept: set[str] = set()
    if collection in METADATA_REWRITTEN:
        known = col.get(ids=[r.id for r in page], include=["embeddings"])
        given = {r.id: r.vector for r in page}
        kept = {i for i, e in zip(known["ids"], known["embeddings"], strict=True)
                if np.array_equal(np.asarray(e, dtype=np.float32), np.asarray(given[i], dtype=np.float32))}
    if kept:
        same = [r for r in page if r.id in kept]
        col.update(ids=[r.id for r in same], metadatas=metadatas_of(collection, same))
    rest = [r for r in page if r.id not in kept]
    if rest:
        col.upsert(ids=[r.id for r in rest], embeddings=[r.vector for r in rest],
                   metadatas=metadatas_of(collection, rest))


def _drop(client: Any, name: str) -> None:
    try:
        client.delete_collection(name)
    except Exception:  # noqa: BLE001 - absent is what we want
        pass
