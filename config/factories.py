"""Adapters built on first use: SQLAlchemy, tiktoken, pgvector and git are imported when first needed,
not when the server starts (together ~0.4 s a client would wait on). The composition root
(config/container.py) decides which of them serves which port."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from domain.ports.documents import ProjectResolver


def engine(url: str) -> Iterator[object]:
    from adapters.sql.store import make_engine

    engine = make_engine(url)
    yield engine
    engine.dispose()


def pgvector(profile: object, engine: object) -> object:
    from adapters.vectors.pgvector import PgVectorIndex

    return PgVectorIndex(profile, engine)  # type: ignore[arg-type]


def sql_store(engine: object) -> object:
    from adapters.sql.ledger import SqlStore

    return SqlStore(engine)  # type: ignore[arg-type]


def projects() -> ProjectResolver:
    from adapters.files.projects import GitProjects

    return GitProjects()


def tokenizer() -> object:
    from adapters.text.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer()


def exporter(root: object) -> object:
    from adapters.files.export import DirectoryExporter

    return DirectoryExporter(root)  # type: ignore[arg-type]
