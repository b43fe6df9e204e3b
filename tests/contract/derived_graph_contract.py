"""The DerivedGraph contract: facts built from records keep their evidence, go with their last record
unless a graph tool wrote them too, and a merged name can be split out again."""

from __future__ import annotations

import dataclasses

from domain.graph.model import Alias, Derived, Entity, Evidence, GraphBuild, Relation
from domain.model import AuditEntry
from domain.validation import epoch
from tests.contract.metadata_store_contract import memory

AUDIT = AuditEntry(action="build_graph", collection="graph", item_ids=(), actor="t", ts="2026-01-01T00:00:00Z",
                   detail={})
MEM, TURN = ("memory", "mem_1"), ("turn", "t_1")
CAROLINE, BOSTON = Entity("Caroline", "person"), Entity("Boston", "place")
WENT = Relation("Caroline", "Boston", "go_to")


def said(origin: tuple[str, str], mention: str = "Caroline", text: str = "Caroline went to Boston.") -> Derived:
    ev = Evidence(origin[0], origin[1], -1, mention, text, "2023-05-07T10:00:00Z")
    return Derived(entities=(CAROLINE, BOSTON), relations=((WENT, ev, "Boston"),),
                   observations=(("Caroline", text, ev),),
                   mentions=(("Caroline", ev), ("Boston", Evidence(origin[0], origin[1], -1, "Boston", text))),
                   aliases=(Alias(mention, "Caroline", "fuzzy", 0.9),) if mention != "Caroline" else ())


class DerivedGraphContract:
    def test_facts_keep_their_evidence_and_go_with_their_last_record(self, store) -> None:
        store.apply_sources("u1", [(MEM, "d1", said(MEM)), (TURN, "d2", said(TURN))], AUDIT)
        assert store.source_digests("u1") == {MEM: "d1", TURN: "d2"} and store.source_digests("u2") == {}
        assert store.entities("u1") == [Entity("Caroline", "person", ("Caroline went to Boston.",)), BOSTON]
        assert store.relations("u1") == [WENT]
        assert [(e.kind, e.record_id, e.when) for e in store.evidence("u1", [WENT])[WENT]] == [
            ("memory", "mem_1", "2023-05-07T10:00:00Z"), ("turn", "t_1", "2023-05-07T10:00:00Z")]
        assert {o for _, o, _ in store.linked_records("u1", ["Boston"], 10)} == {MEM, TURN}
        assert store.named_by("u1", [MEM, ("memory", "other")]) == {MEM: ["Caroline", "Boston"]}
        assert store.named_by("u2", [MEM]) == {}
        assert store.forget_sources("u1", [MEM], AUDIT) == 1
        assert store.relations("u1") == [WENT] and len(store.evidence("u1", [WENT])[WENT]) == 1
        assert store.forget_sources(None, [TURN], None) == 1  # a deleted record: every owner's graph
        assert store.entities("u1") == [] and store.relations("u1") == [] and store.source_digests("u1") == {}

    def test_a_record_read_again_replaces_what_it_said(self, store) -> None:
        store.apply_sources("u1", [(MEM, "d1", said(MEM))], AUDIT)
        other = Derived(entities=(Entity("Melanie", "person"),),
                        mentions=(("Melanie", Evidence("memory", "mem_1", -1, "Melanie", "Melanie paints.")),),
                        observations=(("Melanie", "Melanie paints.", Evidence("memory", "mem_1")),))
        store.apply_sources("u1", [(MEM, "d9", other)], AUDIT)
        assert store.entities("u1") == [Entity("Melanie", "person", ("Melanie paints.",))]
        assert store.relations("u1") == [] and store.source_digests("u1") == {MEM: "d9"}

    def test_what_a_graph_tool_wrote_first_stays_when_a_record_that_names_it_goes(self, store) -> None:
        store.create_entities("u1", [Entity("Caroline", "person", ("Caroline went to Boston.",))], AUDIT)
        store.create_relations("u1", [WENT], AUDIT)
        store.apply_sources("u1", [(MEM, "d1", said(MEM))], AUDIT)  # the same facts, read from a memory
        store.forget_sources(None, [MEM], None)  # the memory deleted
        assert store.entities("u1") == [Entity("Caroline", "person", ("Caroline went to Boston.",))]
        assert store.relations("u1") == [WENT]

    def test_a_chunk_names_what_was_read_from_it(self, store) -> None:
        doc = ("artifact", "art_1")
        first = Derived(entities=(CAROLINE, BOSTON), mentions=(
            ("Caroline", Evidence("artifact", "art_1", 0, "Caroline", "Caroline writes.")),
            ("Boston", Evidence("artifact", "art_1", 3, "Boston", "Boston is far."))))
        store.apply_sources("u1", [(doc, "d1", first)], AUDIT)
        assert store.named_by("u1", [doc]) == {doc: ["Caroline", "Boston"]}
        assert store.named_by("u1", [doc], {doc: {3}}) == {doc: ["Boston"]}
        assert store.named_by("u1", [doc, MEM], {doc: {1}}) == {}

    def test_what_a_graph_tool_wrote_too_stays(self, store) -> None:
        store.apply_sources("u1", [(MEM, "d1", said(MEM))], AUDIT)
        store.create_relations("u1", [WENT], AUDIT)  # the tool: already there, now the caller's too
        store.add_observations("u1", [("Boston", ["a city"])], AUDIT)
        store.forget_sources("u1", [MEM], AUDIT)
        assert store.relations("u1") == [WENT]
        assert store.entities("u1") == [Entity("Boston", "place", ("a city",))]
        assert store.evidence("u1", [WENT])[WENT] == []

    def test_deleting_by_tool_drops_the_evidence(self, store) -> None:
        store.apply_sources("u1", [(MEM, "d1", said(MEM))], AUDIT)
        store.delete_entities("u1", ["Caroline"], AUDIT)
        assert store.relations("u1") == [] and store.evidence("u1", [WENT])[WENT] == []
        store.forget_sources("u1", [MEM], AUDIT)
        assert store.entities("u1") == []

    def test_an_unmerge_moves_what_was_read_under_the_alias(self, store) -> None:
        store.apply_sources("u1", [(TURN, "d2", said(TURN))], AUDIT)
        store.apply_sources("u1", [(MEM, "d1", said(MEM, mention="Carolyn", text="Carolyn went to Boston."))], AUDIT)
        assert store.aliases("u1") == [Alias("Carolyn", "Caroline", "fuzzy", 0.9)]
        assert store.unmerge("u1", "Carolyn", "Nobody", AUDIT) is None
        assert store.unmerge("u1", "Carolyn", "Caroline", AUDIT) == 3  # its mention, observation, relation
        names = {e.name: e for e in store.entities("u1")}
        assert names["Carolyn"] == Entity("Carolyn", "person", ("Carolyn went to Boston.",))
        assert names["Caroline"].observations == ("Caroline went to Boston.",)
        assert set(store.relations("u1")) == {WENT, Relation("Carolyn", "Boston", "go_to")}
        assert store.aliases("u1") == [Alias("Carolyn", "Caroline", "fuzzy", 0.9, blocked=True)]
        assert store.unmerge("u1", "Carolyn", "Caroline", AUDIT) is None  # once

    def test_builds_are_kept_newest_first(self, store) -> None:
        first = GraphBuild("b1", "u1", "running", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
        store.save_build(first)
        store.save_build(GraphBuild("b2", "u1", "running", "2026-01-02T00:00:00Z", "2026-01-02T00:00:00Z"))
        done = GraphBuild("b1", "u1", "done", first.started, "2026-01-01T00:01:00Z", {"kinds": ["memory"]}, 5, 5,
                          errors=("memory mem_9: boom",))
        store.save_build(done)
        assert [b.id for b in store.builds("u1", limit=5)] == ["b2", "b1"]
        assert store.builds("u1", "b1") == [done] and store.builds("u2") == []

    def test_a_deleted_record_takes_what_it_said(self, store) -> None:
        store.add_memory(memory("mem_1"), AUDIT)
        store.apply_sources("u1", [(MEM, "d1", said(MEM))], AUDIT)
        assert store.delete_memory("mem_1", AUDIT)
        assert store.entities("u1") == [] and store.source_digests("u1") == {}

    def test_events_are_kept_in_date_order_and_go_with_their_record(self, store) -> None:
        from domain.graph.model import Event

        def event(kind: str, summary: str, date: str | None, origin: tuple[str, str], who=("Caroline",)) -> Event:
            return Event(kind, summary, who, date, "text" if date else "none", Evidence(origin[0], origin[1], -1, "",
                                                                                      summary))

        conv = ("turn", "c1_turn_3")
        store.apply_sources("u1", [(MEM, "d1", dataclasses.replace(said(MEM), events=(
            event("milestone", "Caroline went to Boston.", "2023-05-07", MEM),
            event("decision", "We chose Boston.", None, MEM, who=())))),
            (conv, "d2", dataclasses.replace(said(conv), events=(
                event("action", "Caroline will fly home.", "2023-05-01", conv),)))], AUDIT)
        every = store.events("u1")
        assert [e.summary for _, _, e in every] == ["Caroline will fly home.", "Caroline went to Boston.",
                                                    "We chose Boston."]  # undated last
        assert [e.summary for _, _, e in store.events("u1", kinds=["decision"])] == ["We chose Boston."]
        assert [e.summary for _, _, e in store.events("u1", who="Caroline", conversation_id="c1")] == [
            "Caroline will fly home."]
        assert len(store.events("u1", since=epoch("2023-05-02"), until=epoch("2023-05-31"))) == 1
        first = every[0]
        assert [e.summary for _, _, e in store.events("u1", after=(first[1], first[0]), limit=1)] == [
            "Caroline went to Boston."]
        assert [e.summary for _, _, e in store.events("u1", origins=[conv])] == ["Caroline will fly home."]
        assert store.events("u2") == []
        store.forget_sources("u1", [MEM], AUDIT)
        assert [e.summary for _, _, e in store.events("u1")] == ["Caroline will fly home."]
