"""Export pages and imports on the in-memory fakes: the order and the cursor, the privacy written back
as given, a record already there adding nothing, conflicts and bad fields refused with their line."""

from __future__ import annotations

import time

import pytest

from domain.access.principal import Principal, RequestContext
from domain.access.privacy import Privacy
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.input import IngestRequest
from domain.errors import ValidationError
from domain.history.usecases import AppendTurn, AppendTurnRequest
from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.model import ChunkSpec
from domain.documents.usecases import ItemWriter
from domain.transfer.usecases import ExportPage, ImportRecords
from plugins.chunkers.markdown import MarkdownChunker
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog

NOW = time.time()


def tools(w, who: str = "local", projects: tuple[str, ...] | None = None):
    me = RequestContext(Principal(who, clearance="sensitive", projects=projects))
    identity = lambda: me  # noqa: E731
    memory = StoreMemory(w.embedder, w.store, w.split, w.tokenizer, identity=identity)
    turn = AppendTurn(w.embedder, w.store, w.store, w.split, w.tokenizer, identity=identity)
    ingest = IngestArtifact(w.embedder, w.store, w.store, catalog(TokenWindowChunker(), MarkdownChunker()), w.tokenizer,
                            ChunkSpec(30, 5, 30), w.split, identity=identity)
    return (memory, turn, ingest, ExportPage(w.store, w.store, w.store, w.store, identity=identity, now=lambda: NOW),
            ImportRecords(w.store, w.store, memory, turn, ingest, w.store, ItemWriter(w.store, ingest), w.store, identity,
                          lambda: NOW))


def everything(export: ExportPage, limit: int = 2) -> list[dict]:
    records, cursor = export(limit=limit)
    while cursor:
        page, cursor = export(cursor, limit)
        records += page
    return records


def test_export_pages_in_order_and_import_gives_the_same_records(world, aworld) -> None:
    memory, turn, ingest, export, _ = tools(world)
    memory(StoreMemoryRequest("Pemberton is the quokka.", "fact", 0.9))
    memory(StoreMemoryRequest("Freeze on Fridays.", "decision", 0.5, "ops",
                              Privacy("sensitive", "custom", "custom", ["carol", "team:hr"], 30)))
    for i in range(3):
        turn(AppendTurnRequest("c1", "user", f"turn {i}", i, f"2026-01-0{i + 1}T00:00:00Z"))
    ingest(IngestRequest("doc", "wiki", "valve " * 200, source_id="rb", ts="2026-02-01T00:00:00Z",
                         labels={"tags": ["ops"], "category": "runbooks"}))
    records = everything(export)
    assert [r["kind"] for r in records] == ["memory", "memory", "turn", "turn", "turn", "artifact"]
    assert records == everything(export, 100)  # pages change nothing
    custom = records[0] if records[0]["type"] == "decision" else records[1]
    assert (custom["visible_to"], custom["retention_days"], custom["sensitivity"]) == (["carol", "team:hr"], 30,
                                                                                       "sensitive")
    *_, export_b, restore_b = tools(aworld)
    assert restore_b(records, check=True) == {"added": 6, "unchanged": 0, "expired": 0}
    assert everything(export_b) == []  # a check writes nothing
    assert restore_b(records) == {"added": 6, "unchanged": 0, "expired": 0}
    assert everything(export_b) == records
    assert restore_b(records) == {"added": 0, "unchanged": 6, "expired": 0}


def test_what_another_caller_sees_is_what_it_exports(world) -> None:
    memory, *_ = tools(world)
    memory(StoreMemoryRequest("Mine alone.", "fact", 1.0))
    *_, alices, _ = tools(world, "alice")
    assert everything(alices) == []


@pytest.mark.parametrize("change, field", [
    ({"ts": "yesterday"}, "ts"), ({"kind": "fact"}, "kind"), ({"colour": "red"}, "colour"),
    ({"id": "mem_123"}, "id"), ({"confidence": 3}, "confidence"), ({"visible_to": ["x"]}, "visible_to"),
    ({"sensitivity": "highly_sensitive"}, "sensitivity"), ({"content": ""}, "content")])
def test_a_bad_record_names_its_line_and_field_and_nothing_is_written(world, aworld, change, field) -> None:
    memory, *_, export, _ = tools(world)
    memory(StoreMemoryRequest("One.", "fact", 1.0))
    memory(StoreMemoryRequest("Two.", "fact", 1.0))
    records = everything(export)
    *_, export_b, restore_b = tools(aworld)
    with pytest.raises(ValidationError) as refused:
        restore_b([records[0], {**records[1], **change}], first_line=7)
    assert refused.value.field == field and refused.value.message.startswith("line 8: ")
    assert everything(export_b) == []


def test_other_content_under_an_id_or_a_turn_is_refused_not_overwritten(world) -> None:
    memory, turn, _, export, restore = tools(world)
    memory(StoreMemoryRequest("Original.", "fact", 1.0))
    turn(AppendTurnRequest("c1", "user", "hello", 0, "2026-01-01T00:00:00Z"))
    records = everything(export)
    for n, record in enumerate(records):
        with pytest.raises(ValidationError) as refused:
            restore([{**record, "content": "Changed."}], first_line=2 + n)
        assert refused.value.field == ("id", "turn_index")[n] and "other content" in refused.value.message
    assert everything(export) == records


def test_only_what_the_caller_wrote_is_exported_and_policies_apply(world) -> None:
    *_, bobs_export, _ = tools(world, "bob")
    bob_memory, *_ = tools(world, "bob")
    bob_memory(StoreMemoryRequest("Bob shares this with his team.", "fact", 1.0, None, Privacy("normal", "team")))
    team_reader = RequestContext(Principal("alice", teams=()))
    assert everything(ExportPage(world.store, world.store, world.store, world.store, identity=lambda: team_reader, now=lambda: NOW)) == []
    assert [r["content"] for r in everything(bobs_export)] == ["Bob shares this with his team."]

    class Withhold:
        name = "withhold-facts"

        def filter_hits(self, hits, context):
            return [h for h in hits if h.type != "memory"]

    withheld = ExportPage(world.store, world.store, world.store, world.store, [Withhold()], identity=bobs_export.identity, now=lambda: NOW)
    assert everything(withheld) == []


def test_a_record_whose_retention_ran_out_is_left_out_not_refused(world, aworld) -> None:
    memory, *_, export, _ = tools(world)
    memory(StoreMemoryRequest("Kept.", "fact", 1.0))
    records = everything(export)
    old = {**records[0], "id": "mem_" + "a" * 32, "ts": "2020-01-01T00:00:00Z", "retention_policy": "1y"}
    *_, export_b, restore_b = tools(aworld)
    assert restore_b([old, records[0]], check=True) == {"added": 1, "unchanged": 0, "expired": 1}
    assert restore_b([old, records[0]]) == {"added": 1, "unchanged": 0, "expired": 1}
    assert [r["content"] for r in everything(export_b)] == ["Kept."]


def test_the_same_content_with_other_privacy_is_a_conflict(world) -> None:
    memory, *_, export, restore = tools(world)
    memory(StoreMemoryRequest("Private note.", "fact", 1.0))
    record = everything(export)[0]
    with pytest.raises(ValidationError) as refused:
        restore([{**record, "sensitivity": "sensitive"}])
    assert refused.value.field == "id"
    assert restore([record]) == {"added": 0, "unchanged": 1, "expired": 0}


def test_project_documents_go_out_with_every_version_and_come_back_searchable(world, aworld) -> None:
    from domain.documents.model import canonical_item_id
    from domain.documents.usecases import draft

    *_, ingest, export, _ = tools(world)
    writer = ItemWriter(world.store, ingest)
    for text in ("# Spec\n\nFirst take.", "# Spec\n\nSecond take, with auth."):
        writer.write(draft("atlas", canonical_item_id("atlas", "app"), "spec", "App spec", text, ("auth",), "app",
                           "app_spec"))
    writer.write(draft("zeus", "doc_" + "1" * 32, "decision", "Use Postgres", "We use Postgres.", ()))
    records = everything(export)
    assert [(r["kind"], r.get("project"), r.get("version_num")) for r in records] == [
        ("document", "atlas", 1), ("document", "atlas", 2), ("document", "zeus", 1)]  # no documents artifacts
    assert records[1]["canonical_key"] == "app" and records[1]["tags"] == ["auth"]
    _, _, ingest_b, export_b, restore_b = tools(aworld)
    assert restore_b(records[:1]) == {"added": 1, "unchanged": 0, "expired": 0}
    assert restore_b(records) == {"added": 2, "unchanged": 1, "expired": 0}
    assert everything(export_b) == records
    latest = aworld.store.item_version("atlas", canonical_item_id("atlas", "app"))
    assert latest.version_num == 2 and latest.created_at == records[1]["created_at"]
    projected = [a for _, a, _ in aworld.store.versions.values() if a.source_system == "documents"]
    assert sorted(a.labels["version_num"] for a in projected) == ["1", "2"]  # each item's newest, searchable
    with pytest.raises(ValidationError) as refused:
        restore_b([{**records[2], "version_num": 3}], first_line=4)
    assert refused.value.field == "version_num"
    with pytest.raises(ValidationError) as refused:
        restore_b([{**records[0], "content": "# Spec\n\nRewritten."}], first_line=2)
    assert refused.value.field == "version_num" and "other content" in refused.value.message
    *_, bobs = tools(aworld, "bob", projects=("zeus",))
    with pytest.raises(ValidationError) as refused:
        bobs(records[:1], check=True)
    assert refused.value.field == "project"


def test_the_callers_graph_goes_out_and_comes_back(world, aworld) -> None:
    from domain.graph.model import Entity, Relation
    from domain.model import AuditEntry

    entry = AuditEntry(action="t", collection="graph", item_ids=(), actor="local", ts="2026-01-01T00:00:00Z",
                       detail={})
    world.store.create_entities("local", [Entity("Maya", "person", ("likes tea",)), Entity("Heron", "project")],
                                entry)
    world.store.create_relations("local", [Relation("Maya", "Heron", "leads"), Relation("Heron", "Gone", "replaces")],
                                 entry)
    world.store.create_entities("bob", [Entity("Bob's", "secret")], entry)  # another caller's graph
    *_, export, _ = tools(world)
    records = everything(export)
    assert [r["kind"] for r in records] == ["entity", "entity", "relation", "relation"]
    *_, export_b, restore_b = tools(aworld)
    assert restore_b(records) == {"added": 4, "unchanged": 0, "expired": 0}
    assert everything(export_b) == records and restore_b(records)["unchanged"] == 4
    more = {**records[0], "observations": ["likes tea", "drinks it green"]}
    assert restore_b([more]) == {"added": 1, "unchanged": 0, "expired": 0}  # the observation it lacked
    with pytest.raises(ValidationError) as refused:
        restore_b([{**records[1], "entity_type": "ship"}], first_line=3)
    assert refused.value.field == "entity_type" and refused.value.message.startswith("line 3: ")
    with pytest.raises(ValidationError) as refused:
        restore_b([{**records[2], "relation_type": ""}])
    assert refused.value.field == "relation_type"


def test_a_memory_and_the_one_that_replaced_it_come_back_as_they_were(world, aworld) -> None:
    memory, *_, export, _ = tools(world)
    tea = memory(StoreMemoryRequest("Ana likes tea.", "preference", 0.9, valid_from="2024-01-01T00:00:00Z"))
    coffee = memory(StoreMemoryRequest("Ana likes coffee.", "preference", 0.9, supersedes=tea.id,
                                       valid_from="2024-06-01T00:00:00Z"))
    records = everything(export)
    old = next(r for r in records if r["id"] == tea.id)
    assert (old["valid_to"], old["superseded_by"]) == ("2024-06-01T00:00:00Z", coffee.id)
    *_, export_b, restore_b = tools(aworld)
    assert restore_b(records) == {"added": 2, "unchanged": 0, "expired": 0}
    back = aworld.store.get_memories([tea.id, coffee.id])
    assert back[tea.id].superseded_by == coffee.id and back[coffee.id].supersedes == tea.id
    assert everything(export_b) == records


def test_an_export_cursor_of_an_older_version_is_refused_by_name(world) -> None:
    """Turns page by (conversation, owner, index) since conversations are each owner's own: a cursor of
    the two-part kind an older memtrove handed out is refused naming cursor, not an internal error."""
    from domain.paging import encode_cursor

    *_, export, _ = tools(world)
    with pytest.raises(ValidationError) as refused:
        export(encode_cursor("export", [1, ["c-1", 3]]), 10)
    assert refused.value.field == "cursor" and "older memtrove" in refused.value.message
