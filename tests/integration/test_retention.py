"""Retention (on the fake, a SQLite file and PostgreSQL, with a clock the tests control): expired artifacts are swept away (audited, once), until_resolved ones when resolved; an
expired item is never read even before the sweep."""

from __future__ import annotations

import pytest

from adapters.memory.scopes import InMemoryStore
from domain.access.principal import Principal, RequestContext
from domain.artifacts.input import IngestRequest
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.usecases import GetArtifact
from domain.errors import NotFoundError, ValidationError
from domain.model import ChunkSpec
from domain.upkeep.retention import ExpireItems, ResolveArtifact
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog

YEAR = 365.25 * 86_400.0
T2020 = 1_577_836_800.0  # 2020-01-01T00:00:00Z


@pytest.fixture(params=["fake", "sqlite", "postgresql"])
def w(request, aworld, tmp_path):
    if request.param == "fake":
        store = InMemoryStore()
    else:
        from adapters.sql.ledger import SqlStore
        from adapters.sql.store import make_engine
        from tests.support.postgres import fresh_database

        url = (f"sqlite:///{tmp_path / 'store.sqlite3'}" if request.param == "sqlite"
               else fresh_database(request.getfixturevalue("postgres_url")))
        store = SqlStore(make_engine(url))
        request.addfinalizer(store.close)
    aworld.store = aworld.artifacts = store
    aworld.ingest = IngestArtifact(aworld.embedder, store, store, catalog(TokenWindowChunker()), aworld.tokenizer,
                                   ChunkSpec(30, 5, 30), aworld.split, now=lambda: T2020)  # written in 2020
    return aworld


def put(w, source_id: str, retention: str, days: int | None = None) -> str:
    request = IngestRequest("note", "wiki", f"Note {source_id} about the ferry.", source_id=source_id,
                            ts="2020-01-01T00:00:00Z", retention_policy=retention, retention_days=days)
    return w.ingest(request).artifact.id


def test_expired_artifacts_are_hidden_then_swept_once(w) -> None:
    yearly, weekly, kept = put(w, "y", "1y"), put(w, "c", "custom", 7), put(w, "f", "forever")
    assert w.store.get_artifact(yearly).expires_epoch == pytest.approx(T2020 + YEAR)
    read = GetArtifact(w.store, now=lambda: T2020 + 30 * 86_400.0)
    assert read(yearly).artifact is not None
    with pytest.raises(NotFoundError):
        read(weekly)  # expired, not swept yet: never returned
    sweep = ExpireItems(w.store, w.store, now=lambda: T2020 + 30 * 86_400.0)
    assert sweep() == 1 and sweep() == 0
    assert w.store.get_artifact(weekly) is None and w.store.get_artifact(yearly) is not None
    assert ExpireItems(w.store, w.store, now=lambda: T2020 + 2 * YEAR)() == 1
    assert w.store.get_artifact(kept) is not None
    assert [(e.action, e.actor) for e in w.store.recent(10) if e.action == "expired"] == [
        ("expired", "retention"), ("expired", "retention")]


def test_until_resolved_expires_when_resolved_by_someone_who_sees_it(w) -> None:
    open_item, other = put(w, "u", "until_resolved"), put(w, "f", "forever")
    assert ExpireItems(w.store, w.store)() == 0
    stranger = ResolveArtifact(w.store, w.store, identity=lambda: RequestContext(Principal("mallory")))
    with pytest.raises(NotFoundError):
        stranger(open_item)
    assert any(e.action == "denied" and e.actor == "mallory" for e in w.store.recent(10))
    with pytest.raises(ValidationError) as wrong:
        ResolveArtifact(w.store, w.store)(other)
    assert wrong.value.field == "artifact_id"
    ResolveArtifact(w.store, w.store)(open_item)
    assert w.store.get_artifact(open_item) is None
    with pytest.raises(ValidationError) as days:
        put(w, "bad", "custom", 0)
    assert days.value.field == "retention_days"


def test_memories_and_turns_expire_like_artifacts(w) -> None:
    from domain.access.privacy import Privacy
    from domain.history.usecases import AppendTurn, AppendTurnRequest, GetHistory
    from domain.memories.usecases import ListMemories, StoreMemory, StoreMemoryRequest

    at_2020 = lambda: "2020-01-01T00:00:00Z"  # noqa: E731 - the clock the items are written by
    store_memory = StoreMemory(w.embedder, w.store, w.split, w.tokenizer, clock=at_2020)
    weekly = store_memory(StoreMemoryRequest("The ferry leaves at nine", "fact", 0.9,
                                             privacy=Privacy(retention_policy="custom", retention_days=7)))
    kept = store_memory(StoreMemoryRequest("The island has one bakery", "fact", 0.9, privacy=Privacy()))
    append = AppendTurn(w.embedder, w.store, w.store, w.split, w.tokenizer, clock=at_2020)
    for index, text in enumerate(["we booked the ferry", "for the island trip"]):
        append(AppendTurnRequest("trip", "user", text, index, privacy=Privacy(retention_policy="1y")))
    later = T2020 + 30 * 86_400.0
    listed = ListMemories(w.store, (), now=lambda: later)()
    assert [h.id for h in listed.items] == [kept.id]  # expired, not swept yet: never returned
    assert len(GetHistory(w.store, (), now=lambda: later)("trip").items) == 2
    assert [t.id for t in GetHistory(w.store, (), now=lambda: T2020 + 2 * YEAR)("trip").items] == []
    assert ExpireItems(w.store, w.store, now=lambda: later)() == 1
    assert w.store.get_memories([weekly.id, kept.id]) == {kept.id: kept}
    assert w.store.lexical_search("memory", ["ferry"], 5) == []
    assert ExpireItems(w.store, w.store, now=lambda: T2020 + 2 * YEAR)() == 2
    assert w.store.recent_turns("local", "trip", 10) == [] and w.store.lexical_search("history", ["island"], 5) == []
    expired = [e for e in w.store.recent(20) if e.action == "expired"]
    assert sorted(e.collection for e in expired) == ["history", "history", "memory"]
    assert all(e.actor == "retention" for e in expired)


def test_a_collection_that_fails_to_sweep_leaves_the_others_swept(aworld) -> None:
    from domain.access.privacy import Privacy
    from domain.errors import StorageError
    from domain.memories.usecases import StoreMemory, StoreMemoryRequest

    w, store = aworld, aworld.store
    StoreMemory(w.embedder, store, w.split, w.tokenizer, clock=lambda: "2020-01-01T00:00:00Z")(
        StoreMemoryRequest("The ferry leaves at nine", "fact", 0.9, privacy=Privacy(retention_policy="1y")))
    put_artifact = IngestArtifact(w.embedder, store, store, catalog(TokenWindowChunker()), w.tokenizer,
                                  ChunkSpec(30, 5, 30), w.split, now=lambda: T2020)
    put_artifact(IngestRequest("note", "wiki", "Old note.", ts="2020-01-01T00:00:00Z", retention_policy="1y"))

    def broken(*_: object) -> None:
        raise StorageError("Failed to write to the metadata store: disk I/O error")

    store.delete_artifact = broken  # type: ignore[method-assign]
    with pytest.raises(StorageError):
        ExpireItems(store, store, now=lambda: T2020 + 2 * YEAR)()
    assert store.memories == {}  # swept although the artifacts' sweep failed
