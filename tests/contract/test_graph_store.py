"""The GraphStore contract (the reference memory server's semantics, per owner) against the in-memory
fake, a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.memory.basics import HashEmbedder
from adapters.memory.scopes import InMemoryStore
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from domain.access.principal import Principal, RequestContext
from domain.access.rules import restrict
from domain.graph.entities import ENTITIES, EntityVectors, entity_record
from domain.graph.model import Entity, Relation
from domain.model import AuditEntry
from domain.ports.graph import GraphStore
from tests.contract.derived_graph_contract import DerivedGraphContract

AUDIT = AuditEntry(action="graph", collection="graph", item_ids=(), actor="t", ts="2026-01-01T00:00:00Z", detail={})
ALICE = Entity("Alice", "person", ("works at Acme Corp", "likes tea"))
BOB = Entity("Bob", "person", ("plays chess",))
ACME = Entity("Acme Corp", "organization", ())


class GraphStoreContract:
    @pytest.fixture
    def store(self) -> GraphStore:
        raise NotImplementedError

    def seeded(self, store: GraphStore) -> GraphStore:
        store.create_entities("u1", [ALICE, BOB, ACME], AUDIT)
        store.create_relations("u1", [Relation("Alice", "Acme Corp", "works_at"), Relation("Alice", "Bob", "knows"),
                                      Relation("Bob", "Charlie", "knows")], AUDIT)
        return store

    def test_entities_are_created_once_by_name_in_order(self, store) -> None:
        assert isinstance(store, GraphStore)
        assert store.create_entities("u1", [ALICE, BOB], AUDIT) == [ALICE, BOB]
        again = Entity("Alice", "robot", ("other",))
        assert store.create_entities("u1", [again, ACME, Entity("Acme Corp", "x")], AUDIT) == [ACME]
        assert store.entities("u1") == [ALICE, BOB, ACME]  # the first Alice kept as she was
        assert store.entities("u1", after=1, limit=1) == [BOB] and store.entities("u1", ["Acme Corp", "Zed"]) == [ACME]
        assert store.entities("u2") == []  # another owner's graph is its own
        assert store.create_entities("u2", [again], AUDIT) == [again]

    def test_relations_are_created_once_even_dangling(self, store) -> None:
        self.seeded(store)
        knows = Relation("Alice", "Bob", "knows")
        assert store.create_relations("u1", [knows, Relation("Bob", "Alice", "knows")], AUDIT) == [
            Relation("Bob", "Alice", "knows")]
        assert store.relations("u1", touching=["Charlie"]) == [Relation("Bob", "Charlie", "knows")]
        assert len(store.relations("u1")) == 4 and store.relations("u2") == []

    def test_observations_are_added_all_or_nothing(self, store) -> None:
        self.seeded(store)
        assert store.add_observations("u1", [("Bob", ["plays chess", "owns a cat", "owns a cat"]), ("Alice", [])],
                                      AUDIT) == [("Bob", ["owns a cat"]), ("Alice", [])]
        assert store.add_observations("u1", [("Bob", ["rides a bike"]), ("Nobody", ["x"])], AUDIT) == "Nobody"
        assert store.entities("u1", ["Bob"])[0].observations == ("plays chess", "owns a cat")  # nothing written
        assert store.add_observations("u2", [("Bob", ["x"])], AUDIT) == "Bob"

    def test_deleting_an_entity_takes_its_relations_and_unknowns_do_nothing(self, store) -> None:
        self.seeded(store)
        store.delete_entities("u1", ["Bob", "Nobody"], AUDIT)
        assert [e.name for e in store.entities("u1")] == ["Alice", "Acme Corp"]
        assert store.relations("u1") == [Relation("Alice", "Acme Corp", "works_at")]
        store.delete_observations("u1", [("Alice", ["likes tea", "never said"]), ("Nobody", ["x"])], AUDIT)
        assert store.entities("u1", ["Alice"])[0].observations == ("works at Acme Corp",)
        store.delete_relations("u1", [Relation("Alice", "Acme Corp", "works_at"), Relation("A", "B", "c")], AUDIT)
        assert store.relations("u1") == []

    def test_thousands_of_names_at_once(self, store) -> None:
        """A walk three relations deep asks about thousands of names in one call (SQL: in parts)."""
        names = [f"n{i}" for i in range(6_000)]
        store.create_entities("u1", [Entity(n, "thing", (f"about {n}",)) for n in names], AUDIT)
        store.create_relations("u1", [Relation(names[i], names[i + 1], "next") for i in range(0, 6_000, 2)], AUDIT)
        found = store.entities("u1", list(reversed(names)))
        assert [e.name for e in found] == names and found[-1].observations == ("about n5999",)
        assert len(store.entities("u1")) == 6_000 and store.entities("u1", names, after=5_998) == found[-2:]
        touching = store.relations("u1", names[1::2])
        assert len(touching) == 3_000 and touching[0] == Relation("n0", "n1", "next")

    def test_match_is_any_case_on_name_type_or_observation(self, store) -> None:
        self.seeded(store)
        assert store.match_entities("u1", "ALICE") == ["Alice"]
        assert store.match_entities("u1", "acme") == ["Alice", "Acme Corp"]  # her observation, its name
        assert store.match_entities("u1", "PERSON") == ["Alice", "Bob"]
        assert store.match_entities("u1", "100%_") == [] and store.match_entities("u2", "alice") == []
        assert store.match_entities("u1", "") == ["Alice", "Bob", "Acme Corp"]


    def test_an_entity_the_tools_write_is_a_record_found_by_its_words_and_vectors(self, store) -> None:
        """domain/graph/entities.py: its record, words and vectors written with it and deleted with it."""
        tools = EntityVectors(store, HashEmbedder())
        quill = Entity("Ada_Quill", "person", ("Keeps bees on the roof",))
        record = entity_record("u1", "Ada_Quill")
        assert tools.create_entities("u1", [quill, Entity("Ada_Quill", "robot")], AUDIT) == [quill]
        assert store.entity_records([record, "ent_nothing"]) == {record: ("u1", quill)}
        assert [m.record_id for m in store.lexical_search(ENTITIES, ["bees"], 5)] == [record]
        mine, theirs = (restrict({"ts_epoch": {"$gte": 0.0}}, RequestContext(Principal(user)), time.time())
                        for user in ("u1", "u2"))
        assert [m.record_id for m in store.lexical_search(ENTITIES, ["bees"], 5, mine)] == [record]
        assert store.lexical_search(ENTITIES, ["bees"], 5, theirs) == []  # the access rule, inside the index
        assert store.count_vectors(ENTITIES) == 2  # its name, its observation
        tools.create_entities("u1", [quill], AUDIT)  # there already: nothing embedded or stored again
        assert store.count_vectors(ENTITIES) == 2
        assert tools.add_observations("u1", [("Ada_Quill", ["Sells honey at the market", "Keeps bees on the roof"])],
                                      AUDIT) == [("Ada_Quill", ["Sells honey at the market"])]
        assert store.count_vectors(ENTITIES) == 3 and [m.record_id for m in store.lexical_search(
            ENTITIES, ["honey"], 5)] == [record]
        store.delete_observations("u1", [("Ada_Quill", ["Keeps bees on the roof"])], AUDIT)
        assert store.count_vectors(ENTITIES) == 2 and store.lexical_search(ENTITIES, ["bees"], 5) == []
        assert tools.create_entities("u2", [quill], AUDIT) == [quill]  # another owner's: a record of its own
        store.delete_entities("u1", ["Ada_Quill"], AUDIT)
        assert store.entity_records([record]) == {} and store.lexical_search(ENTITIES, ["honey"], 5) == []
        assert store.count_vectors(ENTITIES) == 2  # u2's
        assert list(store.entity_records([entity_record("u2", "Ada_Quill")]).values()) == [("u2", quill)]


class TestInMemoryGraphStore(GraphStoreContract, DerivedGraphContract):
    @pytest.fixture
    def store(self):
        return InMemoryStore()


class TestSqliteGraphStore(GraphStoreContract, DerivedGraphContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


class TestPostgresGraphStore(GraphStoreContract, DerivedGraphContract):
    @pytest.fixture
    def store(self, postgres_url: str):
        from tests.support.postgres import fresh_database

        store = SqlStore(make_engine(fresh_database(postgres_url)))
        yield store
        store.close()
