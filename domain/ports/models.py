"""Ports of the models and indexes: embedder, tokenizer, vector index, lexical index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from domain.model import (
    EmbeddingProfile, LexicalMatch, Vector, VectorMatch, VectorRecord,
)
from domain.ports.filters import Filter
from domain.search.lexical import LexicalStats


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one embedding profile."""

    profile: EmbeddingProfile

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]: ...

    def embed_query(self, text: str) -> Vector: ...

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text``, in its own units (special tokens included)."""
        ...

    def token_ceiling(self, text: str) -> int:
        """At least ``count_tokens(text)``, found without tokenizing where the model allows it (a
        byte-level BPE token holds at least one byte); by default, the count itself."""
        return self.count_tokens(text)

    def describe(self) -> dict[str, Any]:
        """Configuration facts for health checks (never a secret)."""
        ...


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens and tells where each token starts, for chunking."""

    name: str

    def count(self, text: str) -> int: ...

    def token_starts(self, text: str) -> list[int]:
        """Character offset at which each token starts, ascending; one entry per token."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search over the vectors of one embedding profile."""

    profile: EmbeddingProfile
    # Whether a metadata filter costs about what an unfiltered query does. When it does not (Chroma
    # pre-filters through its SQLite segment: 10-20x an unfiltered query), searches pass it only the
    # caller's own filters and hold the hits to the access rule on the rows, fetching deeper as needed.
    filters_cheaply: bool = True

    def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None: ...

    def query(
        self, collection: str, vector: Vector, limit: int, where: Filter | None = None
    ) -> list[VectorMatch]: ...

    def delete_records(self, collection: str, record_ids: Sequence[str]) -> None:
        """Delete every vector owned by these records."""
        ...

    def delete_vectors(self, collection: str, vector_ids: Sequence[str]) -> None: ...

    def delete_where(self, collection: str, where: Filter) -> None:
        """Delete every vector whose metadata matches ``where`` (equality filters)."""
        ...

    def vectors_of(self, collection: str, record_ids: Sequence[str]) -> dict[str, list[str]]:
        """The vector ids each record owns (records without vectors are left out)."""
        ...

    def all_vectors(self, collection: str) -> dict[str, str]:
        """Every vector id in the collection with the record id that owns it."""
        ...

    def vector_ids(self, collection: str, where: Filter) -> list[str]:
        """The ids of the vectors whose metadata matches ``where``."""
        ...

    def drop(self, collection: str) -> None:
        """Remove the collection and every vector in it (a rebuild starts from nothing)."""
        ...

    def export(self, collection: str, offset: int, limit: int) -> list[VectorRecord]:
        """A page of the collection's vectors with their metadata, in a stable order."""
        ...

    def count(self, collection: str) -> int: ...

    def rebuild(self, collection: str) -> None:
        """Rebuild the collection's search index from its stored vectors (after heavy deletes)."""
        ...

    def storage_bytes(self) -> int:
        """What the index keeps on disk besides the store's own figure (ArtifactScopes.storage_bytes):
        an embedded index's files; 0 when it lives in the store's database or on a server."""
        ...


@runtime_checkable
class LexicalIndex(Protocol):
    """Word and exact-token search over what the store holds, kept in the same transactions as its rows.

    Collections are the vector index's: ``memory``, ``history``, ``artifact`` (unchunked artifacts,
    title and content) and ``chunk``. Only committed, current records are ever returned, and
    ``where`` (the vector index's filter format) is applied inside the query, before ``limit``.
    """

    def lexical_stats(self, collection: str, words: Sequence[str], tokens: Sequence[str] = ()) -> LexicalStats:
        """The records of the collection's word index (current ones: a memory's ended versions are not
        counted) and, for each word and exact token, how many of them hold it, as ``lexical_search`` finds
        a word (a turn also by its neighbours' words, a chunk by its headings) and ``exact_search`` a
        token. A count may stop at a bound past a few thousand (a term that common weighs little either
        way). A query or two."""
        ...

    def lexical_search(
        self, collection: str, words: Sequence[str], limit: int, where: Filter | None = None,
        context_weight: float = 0.35, idf: Mapping[str, float] | None = None,
    ) -> list[LexicalMatch]:
        """Records matching any of the words (stemmed by the backend), best BM25-style score first.

        A history turn's neighbours' words count ``context_weight`` of its own (0: not at all). Each
        word weighs its ``idf`` (``domain.search.lexical.idf`` over all the collections a search asks, so
        that their scores compare; a word it does not name is not matched); without one, its idf in this
        collection alone.
        """
        ...

    def exact_search(
        self, collection: str, tokens: Sequence[str], limit: int, where: Filter | None = None,
        idf: Mapping[str, float] | None = None,
    ) -> list[LexicalMatch]:
        """Records containing any of the tokens verbatim (case-insensitive substrings), best first: by
        how often, each token weighed by its ``idf`` as in ``lexical_search``."""
        ...
