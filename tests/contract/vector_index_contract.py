"""The behaviour every VectorIndex shares; subclass VectorIndexContract as ``Test...`` to run it."""

from __future__ import annotations

import math

import pytest

from domain.model import EmbeddingProfile, VectorRecord
from domain.ports import VectorIndex

PROFILE = EmbeddingProfile("fake", "unit-axes", 4, 64)


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


def record(vid: str, owner: str, vector: list[float], **meta: object) -> VectorRecord:
    return VectorRecord(id=vid, record_id=owner, vector=vector, metadata=dict(meta))


class VectorIndexContract:
    """Subclasses override the ``index`` fixture with a fresh, empty index of ``PROFILE``."""

    @pytest.fixture
    def index(self) -> VectorIndex:
        raise NotImplementedError

    @pytest.fixture
    def filled(self, index: VectorIndex) -> VectorIndex:
        index.upsert("memory", [
            record("a::1::0", "a", unit(1, 0, 0, 0), confidence=0.9, type="fact"),
            record("a::1::1", "a", unit(1, 1, 0, 0), confidence=0.9, type="fact"),
            record("b::1::0", "b", unit(0, 1, 0, 0), confidence=0.2, type="preference"),
            record("c::1::0", "c", unit(0, 0, 1, 0), confidence=0.5, type="fact"),
        ])
        return index

    def test_satisfies_the_port(self, index: VectorIndex) -> None:
        assert isinstance(index, VectorIndex)

    def test_nearest_first_with_cosine_scores(self, filled: VectorIndex) -> None:
        matches = filled.query("memory", unit(1, 0, 0, 0), 4)
        assert [m.id for m in matches][:2] == ["a::1::0", "a::1::1"]
        assert matches[0].score == pytest.approx(1.0, abs=1e-4)
        assert matches[1].score == pytest.approx(math.sqrt(0.5), abs=1e-3)
        assert matches[0].record_id == "a"
        assert all(x.score >= y.score for x, y in zip(matches, matches[1:]))

    def test_a_match_names_its_record_even_one_with_separators_in_its_id(self, index: VectorIndex) -> None:
        index.upsert("chunk", [record("art_1::part::7::0123456789ab::2", "art_1::part::7", unit(1, 0, 0, 0))])
        assert [(m.id, m.record_id) for m in index.query("chunk", unit(1, 0, 0, 0), 1)] == [
            ("art_1::part::7::0123456789ab::2", "art_1::part::7")]
        with pytest.raises(ValueError, match="does not name its record"):
            record("other::1::0", "art_1", unit(1, 0, 0, 0))

    def test_limit(self, filled: VectorIndex) -> None:
        assert len(filled.query("memory", unit(1, 0, 0, 0), 2)) == 2

    def test_limit_above_count_returns_all(self, filled: VectorIndex) -> None:
        assert len(filled.query("memory", unit(1, 0, 0, 0), 50)) == 4

    def test_empty_collection_answers_nothing(self, index: VectorIndex) -> None:
        assert index.query("history", unit(1, 0, 0, 0), 5) == []
        assert index.count("history") == 0

    def test_filters_equality_and_range(self, filled: VectorIndex) -> None:
        assert {m.record_id for m in filled.query("memory", unit(1, 1, 1, 0), 10, {"type": "fact"})} == {"a", "c"}
        ranged = filled.query("memory", unit(1, 1, 1, 0), 10, {"confidence": {"$gte": 0.5}})
        assert {m.record_id for m in ranged} == {"a", "c"}
        both = filled.query("memory", unit(1, 1, 1, 0), 10, {"type": "fact", "confidence": {"$gte": 0.6}})
        assert {m.record_id for m in both} == {"a"}

    def test_filters_any_of_several_access_keys_with_the_rest(self, index: VectorIndex) -> None:
        """The access rule's shape: "$or" of flag equalities (one alone too), $in, and a strict bound."""
        index.upsert("chunk", [
            record("p::1::0", "p", unit(1, 0, 0, 0), **{"acl:u:alice": True}, sensitivity="normal", expires_epoch=9e15),
            record("q::1::0", "q", unit(1, 1, 0, 0), **{"acl:u:bob": True, "acl:t:eng": True}, sensitivity="normal",
                   expires_epoch=9e15),
            record("r::1::0", "r", unit(1, 1, 1, 0), **{"acl:t:eng": True}, sensitivity="sensitive", expires_epoch=9e15),
            record("s::1::0", "s", unit(0, 1, 1, 0), **{"acl:u:alice": True}, sensitivity="normal", expires_epoch=50.0),
        ])

        def found(where: dict) -> set[str]:
            return {m.record_id for m in index.query("chunk", unit(1, 1, 1, 1), 10, where)}

        if not index.filters_cheaply:
            # Searches hold its hits to the access rule on the rows and ask it only for the caller's
            # own filters and the sensitivity: it keeps neither access keys nor expiry (disk).
            assert found({"sensitivity": {"$in": ["normal"]}}) == {"p", "q", "s"}
            kept = {k for r in index.export("chunk", 0, 10) for k in r.metadata}
            assert kept == {"sensitivity"}
            return
        alice = [{"acl:u:alice": True}, {"acl:t:eng": True}]
        assert found({"$or": alice}) == {"p", "q", "r", "s"}
        assert found({"$or": alice, "sensitivity": {"$in": ["normal"]}}) == {"p", "q", "s"}
        assert found({"$or": alice, "sensitivity": {"$in": ["normal"]}, "expires_epoch": {"$gt": 50.0}}) == {"p", "q"}
        assert found({"$or": [{"acl:u:bob": True}]}) == {"q"}
        assert found({"$or": [{"acl:u:carol": True}, {"acl:t:ops": True}]}) == set()

    def test_collections_are_separate(self, filled: VectorIndex) -> None:
        filled.upsert("history", [record("t::1::0", "t", unit(1, 0, 0, 0))])
        assert [m.record_id for m in filled.query("history", unit(1, 0, 0, 0), 10)] == ["t"]
        assert filled.count("memory") == 4 and filled.count("history") == 1

    def test_upsert_replaces_same_id(self, filled: VectorIndex) -> None:
        filled.upsert("memory", [record("c::1::0", "c", unit(1, 0, 0, 0), confidence=0.5, type="fact")])
        assert filled.count("memory") == 4
        assert filled.query("memory", unit(1, 0, 0, 0), 1)[0].score == pytest.approx(1.0, abs=1e-4)

    def test_delete_records_removes_every_piece(self, filled: VectorIndex) -> None:
        filled.delete_records("memory", ["a"])
        assert {m.record_id for m in filled.query("memory", unit(1, 0, 0, 0), 10)} == {"b", "c"}
        assert filled.count("memory") == 2

    def test_delete_vectors_by_id(self, filled: VectorIndex) -> None:
        filled.delete_vectors("memory", ["a::1::1", "missing::0::0"])
        assert filled.vectors_of("memory", ["a", "b", "z"]) == {"a": ["a::1::0"], "b": ["b::1::0"]}

    def test_all_vectors_maps_ids_to_owners(self, filled: VectorIndex) -> None:
        assert filled.all_vectors("memory") == {"a::1::0": "a", "a::1::1": "a", "b::1::0": "b", "c::1::0": "c"}

    def test_deleting_nothing_is_fine(self, filled: VectorIndex) -> None:
        filled.delete_records("memory", [])
        filled.delete_vectors("memory", [])
        assert filled.count("memory") == 4

    def test_delete_where_matches_metadata(self, filled: VectorIndex) -> None:
        filled.delete_where("memory", {"type": "fact", "confidence": 0.9})
        assert set(filled.all_vectors("memory").values()) == {"b", "c"}
        filled.delete_where("memory", {"type": "nothing-has-this"})
        assert filled.count("memory") == 2

    def test_rebuild_keeps_every_vector_searchable(self, filled: VectorIndex) -> None:
        filled.delete_records("memory", ["b"])
        filled.rebuild("memory")
        assert filled.all_vectors("memory") == {"a::1::0": "a", "a::1::1": "a", "c::1::0": "c"}
        assert filled.query("memory", unit(0, 0, 1, 0), 1)[0].record_id == "c"
        assert {m.record_id for m in filled.query("memory", unit(1, 1, 1, 0), 10, {"type": "fact"})} == {"a", "c"}
        filled.upsert("memory", [record("d::1::0", "d", unit(0, 0, 0, 1), type="fact")])
        assert filled.query("memory", unit(0, 0, 0, 1), 1)[0].record_id == "d"
