"""Spec 001's and spec 002's use cases on the in-memory fakes: scope, duplicates, granularities,
reads, stats, cleanup, export, and the Zapomni filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.files.export import DirectoryExporter
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.usecases import DeleteArtifact
from domain.errors import NotFoundError, ValidationError
from domain.model import ChunkSpec
from domain.search.passages import PassageSearch
from domain.sessions.search import FineSearch, Memories, ScopedLookup, SectionSearch
from domain.sessions.store import StoreSessionMemory, StoreSessionRequest
from domain.sessions.upkeep import CleanupOldMemories, DeleteSessionMemory, ExportDocument
from domain.sessions.utility import ExpandChunk, GetSessionMemory, GetSessionStats, ListSessions, Reconstruct
from domain.zapomni.usecases import AddMemory, GetStats, LatencyMeter, SearchMemory
from plugins.chunkers.markdown import MarkdownChunker
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, searcher, synced

REPORT = "# Audit\n\nIntro words.\n\n" + "\n\n".join(
    f"## {name}\n\n" + " ".join(f"{word}{i}" for i in range(60)) for name, word in
    (("Pool", "connection"), ("Retries", "backoff"), ("Cache", "redis")))


class Clock:
    def __init__(self) -> None:
        self.minute = 0

    def __call__(self) -> str:
        self.minute += 1
        return f"2026-01-01T00:{self.minute % 60:02d}:{self.minute // 60:02d}Z"


@pytest.fixture
def s(aworld):
    clock = Clock()
    ingest = IngestArtifact(aworld.embedder, aworld.store, aworld.store,
                            catalog(TokenWindowChunker(), MarkdownChunker()), aworld.tokenizer,
                            ChunkSpec(30, 5, 30), aworld.split, clock=clock)
    aworld.clock, aworld.ingest = clock, ingest
    aworld.put = StoreSessionMemory(ingest)
    aworld.memories = Memories(aworld.store, aworld.store)
    aworld.fine = FineSearch(PassageSearch(searcher(aworld), aworld.store, aworld.embedder, aworld.store))
    return aworld


def test_the_same_content_in_the_same_scope_is_the_same_memory(s) -> None:
    first = s.put(StoreSessionRequest("report", REPORT, session_id="s1", agent_id="a"))
    again = s.put(StoreSessionRequest("report", REPORT, session_id="s1", agent_id="a"))
    elsewhere = s.put(StoreSessionRequest("report", REPORT, session_id="s2", agent_id="a"))
    assert (first.duplicate, again.duplicate, elsewhere.duplicate) == (False, True, False)
    assert again.artifact.id == first.artifact.id != elsewhere.artifact.id
    assert first.chunks_created > 1 and first.artifact.labels["memory_type"] == "report"


def test_orchestrator_types_are_the_main_orchestrators_and_kept_whole(s) -> None:
    stored = s.put(StoreSessionRequest("session_context", REPORT, session_id="s1", session_iter="v1", agent_id="x"))
    assert stored.artifact.labels["agent_id"] == "main-orchestrator" and stored.chunks_created == 0


@pytest.mark.parametrize("request_, field", [
    (StoreSessionRequest("report", "x", session_id="", agent_id="a"), "session_id"),
    (StoreSessionRequest("report", "x" * 500_001, session_id="s", agent_id="a"), "content"),
    (StoreSessionRequest("session_context", "x", session_id="s"), "session_iter"),
    (StoreSessionRequest("knowledge_base", "x", agent_id="a"), "title"),
    (StoreSessionRequest("nonsense", "x", session_id="s", agent_id="a"), "memory_type"),
])
def test_bad_scope_is_refused_naming_the_field_and_stores_nothing(s, request_, field) -> None:
    with pytest.raises(ValidationError) as refused:
        s.put(request_)
    assert refused.value.field == field and s.store.artifact_counts() == (0, 0)


def test_scoped_lookup_orders_iterations_naturally(s) -> None:
    for iteration in ("v2", "v10", "v1"):
        s.put(StoreSessionRequest("session_context", f"context {iteration}", session_id="s1", session_iter=iteration))
    look = ScopedLookup(s.store, s.memories)
    newest = [m.labels["session_iter"] for m in look({"session_id": "s1", "memory_type": "session_context"}, 5)]
    oldest = [m.labels["session_iter"] for m in look({"session_id": "s1"}, 5, latest_first=False)]
    assert newest == ["v10", "v2", "v1"] and oldest == ["v1", "v2", "v10"]


def test_fine_finds_the_chunk_of_the_section_and_medium_returns_the_section_whole(s) -> None:
    stored = s.put(StoreSessionRequest("report", REPORT, session_id="s1", agent_id="a"))
    s.put(StoreSessionRequest("report", "unrelated words entirely", session_id="s2", agent_id="a"))
    synced(s)
    passages = s.fine("backoff7 backoff8", {"memory_type": "report", "session_id": "s1"}, 3)
    assert passages and passages[0].chunk is not None and passages[0].chunk.metadata["heading_path"] == ["Audit", "Retries"]
    assert all(p.artifact.id == stored.artifact.id and 0.0 <= p.similarity <= 1.0 for p in passages)
    sections = SectionSearch(s.fine, s.store)("backoff7 backoff8", {"memory_type": "report"}, 2)
    top = sections[0]
    assert top.key == ("Audit", "Retries") and top.content in REPORT and top.content.startswith("## Retries")
    assert 0 < top.matched <= len(top.chunks) and top.match_ratio == top.matched / len(top.chunks)


def test_reconstruct_expand_and_reads(s) -> None:
    stored = s.put(StoreSessionRequest("report", REPORT, session_id="s1", agent_id="a")).artifact
    artifact, content = Reconstruct(s.store)(stored.id)
    assert content == REPORT and artifact.num_chunks > 2
    middle = s.store.chunks_of(stored.id)[1]
    around = ExpandChunk(s.store)(middle.id, 1)
    assert [c.index for c in around.chunks] == [0, 1, 2] and around.target.id == middle.id
    get = GetSessionMemory(s.store, s.store, clock=s.clock)
    assert (get(stored.id).access_count, get(stored.id).access_count) == (1, 2)
    with pytest.raises(NotFoundError):
        get("art_" + "0" * 32)
    with pytest.raises(ValidationError) as refused:
        ExpandChunk(s.store)(middle.id, 21)
    assert refused.value.field == "surrounding_chunks"


def test_stats_sessions_and_cleanup(s) -> None:
    s.put(StoreSessionRequest("session_context", "ctx", session_id="s1", session_iter="v1"))
    s.put(StoreSessionRequest("report", REPORT, session_id="s1", agent_id="explorer"))
    s.put(StoreSessionRequest("working_memory", "notes", session_id="s2", agent_id="explorer"))
    kb = s.put(StoreSessionRequest("knowledge_base", "kb text", agent_id="explorer", title="KB")).artifact
    core = s.ingest.__call__  # a core artifact is never a session memory
    from domain.artifacts.input import IngestRequest
    core_doc = core(IngestRequest("doc", "drive", "a core document", source_id="d1")).artifact
    stats = GetSessionStats(s.store)("s1")
    assert stats.memory_counts == {"session_context": 1, "report": 1} and stats.total_memories == 2
    assert stats.agent_counts == {"main-orchestrator": 1, "explorer": 1} and stats.total_chunks > 0
    sessions, total = ListSessions(s.store)(20)
    assert total == 2 and [x.session_id for x in sessions] == ["s2", "s1"]
    assert ListSessions(s.store)(20, "main-orchestrator")[1] == 1
    delete = DeleteArtifact(s.store, s.store, clock=s.clock)
    cleanup = CleanupOldMemories(s.store, delete, s.store, clock=lambda: "2026-02-01T00:00:00Z")
    dry = cleanup(0)
    assert dry.dry_run and dry.memories == 4 and s.store.artifact_counts("sessions")[0] == 4
    done = cleanup(0, False)
    assert done.memories == 4 and s.store.artifact_counts("sessions") == (0, 0)
    assert s.store.get_artifact(core_doc.id) is not None and s.store.get_artifact(kb.id) is None
    assert s.store.recent(1)[0].action == "cleanup"
    with pytest.raises(NotFoundError):
        DeleteSessionMemory(s.store, delete)(core_doc.id)  # not a session memory


def test_export_writes_front_matter_and_content_inside_the_export_dir(s, tmp_path: Path) -> None:
    stored = s.put(StoreSessionRequest("report", REPORT, session_id="s1", agent_id="a")).artifact
    export = ExportDocument(s.store, DirectoryExporter(tmp_path / "exports"))
    _, written, size = export(stored.id, "out/report.md")
    text = Path(written).read_text()
    assert Path(written).parent == tmp_path / "exports" / "out" and size == len(text.encode())
    assert text.startswith("---\n") and f'memory_id: "{stored.id}"' in text and text.endswith(REPORT)
    for bad in ("/etc/x.md", "../x.md", "a/../../x.md"):
        with pytest.raises(ValidationError) as refused:
            export(stored.id, bad)
        assert refused.value.field == "output_path"
    assert sorted(p.name for p in (tmp_path / "exports").rglob("*")) == ["out", "report.md"]


def test_zapomni_add_search_filters_and_stats(s) -> None:
    add = AddMemory(s.ingest)
    meter = LatencyMeter()
    first = add("Python was made by Guido", {"tags": ["python"], "source": "wiki", "date": "2020-01-01T00:00:00Z"})
    rust = add("Rust has no garbage collector", {"tags": ["rust"], "source": "blog", "date": "2023-01-01T00:00:00Z"})
    assert add("Python was made by Guido", {"tags": ["python"], "source": "wiki",
                                            "date": "2020-01-01T00:00:00Z"}).duplicate
    synced(s)
    search = SearchMemory(PassageSearch(searcher(s), s.store, s.embedder, s.store), meter)

    def ids(query: str, filters: dict[str, object] | None = None) -> list[str]:
        return [p.artifact.id for p in search(query, 5, filters)]
    assert ids("python guido")[:1] == [first.memory_id]
    # Each filter lets its memory through and keeps the other out, whatever the words ask for.
    assert ids("garbage collector", {"tags": ["rust"]}) == [rust.memory_id]
    assert rust.memory_id not in ids("garbage collector", {"tags": ["python"]})
    assert ids("garbage collector", {"source": "blog"}) == [rust.memory_id]
    assert rust.memory_id not in ids("garbage collector", {"source": "wiki"})
    assert ids("python guido", {"date_to": "2021-01-01T00:00:00Z"}) == [first.memory_id]
    assert first.memory_id not in ids("python guido", {"date_from": "2022-01-01T00:00:00Z"})
    stats = GetStats(s.store, meter, s.vectors)()
    assert (stats.total_memories, stats.avg_query_latency_ms is not None) == (2, True)
    for call, field in ((lambda: add("   "), "text"), (lambda: search("x" * 1001), "query"),
                        (lambda: search("x", 101), "limit"), (lambda: search("x", 5, {"colour": 1}), "filters")):
        with pytest.raises(ValidationError) as refused:
            call()
        assert refused.value.field == field
    with pytest.raises(ValidationError, match="text cannot be empty or whitespace-only"):
        add(" \n ")


def test_zapomni_refuses_metadata_that_is_not_json(s) -> None:
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValidationError) as refused:
            AddMemory(s.ingest)("text", {"score": bad})
        assert refused.value.field == "metadata"
    assert s.store.artifact_counts() == (0, 0)


def test_cleanup_and_delete_touch_only_session_memories(s) -> None:
    from domain.artifacts.input import IngestRequest

    foreign = s.ingest(IngestRequest("doc", "sessions", "a user's own document named like ours", source_id="x")).artifact
    delete = DeleteArtifact(s.store, s.store, clock=s.clock)
    report = CleanupOldMemories(s.store, delete, s.store, clock=lambda: "2027-01-01T00:00:00Z")(0, False)
    assert report.memories == 0 and s.store.get_artifact(foreign.id) is not None
    with pytest.raises(NotFoundError):
        DeleteSessionMemory(s.store, delete)(foreign.id)
