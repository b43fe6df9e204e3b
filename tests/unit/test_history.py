"""History use cases on the in-memory fakes."""

from __future__ import annotations

import pytest

from domain.errors import StorageError, ValidationError
from domain.model import VectorRecord
from domain.usecases.history import CONTEXT_COLLECTION, AppendTurn, AppendTurnRequest, GetHistory
from domain.usecases.maintenance import RepairStores


def append_uc(world, clock=None):
    kwargs = {"clock": clock} if clock else {}
    return AppendTurn(world.embedder, world.vectors, world.store, world.split, world.tokenizer, **kwargs)


def test_append_and_get_oldest_first(world) -> None:
    append = append_uc(world)
    for i, role in enumerate(["user", "assistant", "user"]):
        assert append(AppendTurnRequest("conv1", role, f"turn {i}", i)).status == "appended"
    turns = GetHistory(world.store, world.policies)("conv1", 2)
    assert [t.turn_index for t in turns] == [1, 2]
    assert turns[0].id == "conv1_turn_1" and turns[0].role == "assistant"


def test_same_content_is_a_no_op(world) -> None:
    append = append_uc(world)
    first = append(AppendTurnRequest("c", "user", "hello", 0))
    calls = len(world.embedder.calls)
    again = append(AppendTurnRequest("c", "user", "hello", 0))
    assert again.status == "unchanged" and again.turn == first.turn
    assert len(world.embedder.calls) == calls and len(world.store.audit) == 1


def test_new_content_replaces_turn_and_its_vectors(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", " ".join(["old"] * 120), 0))
    assert len(world.vectors.vectors_of("history", ["c_turn_0"])["c_turn_0"]) > 1
    result = append(AppendTurnRequest("c", "user", "brand new", 0))
    assert result.status == "replaced"
    assert world.store.get_turn("c", 0).content == "brand new"
    assert len(world.vectors.vectors_of("history", ["c_turn_0"])["c_turn_0"]) == 1
    assert RepairStores(world.store, world.vectors)().stale_vectors_removed == 0


def test_ts_is_normalised_to_utc(world) -> None:
    turn = append_uc(world)(AppendTurnRequest("c", "user", "hi", 0, "2025-12-25T12:30:00+02:00")).turn
    assert turn.ts == "2025-12-25T10:30:00Z"
    naive = append_uc(world)(AppendTurnRequest("c", "user", "hi", 1, "2025-12-25T10:30:00")).turn
    assert naive.ts == "2025-12-25T10:30:00Z"


@pytest.mark.parametrize("request_, field", [
    (AppendTurnRequest("", "user", "x", 0), "conversation_id"),
    (AppendTurnRequest("c" * 101, "user", "x", 0), "conversation_id"),
    (AppendTurnRequest("c", "robot", "x", 0), "role"),
    (AppendTurnRequest("c", "user", "", 0), "content"),
    (AppendTurnRequest("c", "user", "x" * 50_001, 0), "content"),
    (AppendTurnRequest("c", "user", "x", -1), "turn_index"),
    (AppendTurnRequest("c", "user", "x", True), "turn_index"),
    (AppendTurnRequest("c", "user", "x", 0, "yesterday"), "ts"),
    (AppendTurnRequest("c", "user", "x", 0, "2025-13-45T00:00:00Z"), "ts"),
])
def test_bad_append_input_changes_nothing(world, request_, field) -> None:
    with pytest.raises(ValidationError) as raised:
        append_uc(world)(request_)
    assert raised.value.field == field and field in raised.value.message.lower()
    assert world.store.turns == {} and world.vectors.count("history") == 0


def test_get_history_limits(world) -> None:
    get = GetHistory(world.store, world.policies)
    assert get("nobody") == []
    with pytest.raises(ValidationError, match="Limit must be between 1 and 50"):
        get("c", 51)
    with pytest.raises(ValidationError, match="conversation_id"):
        get("", 5)


def test_repair_removes_orphans_and_stale_versions(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "version one", 0))
    before = dict(world.vectors.all_vectors("history"))
    append(AppendTurnRequest("c", "user", "version two", 0))
    # Simulate a crash after the new row but before stale vectors were dropped, and an orphan.
    for vid, owner in before.items():
        world.vectors.upsert("history", [VectorRecord(vid, owner, [1.0] + [0.0] * 63)])
    world.vectors.upsert("history", [VectorRecord("gone_turn_0::abc::0", "gone_turn_0", [1.0] + [0.0] * 63)])
    report = RepairStores(world.store, world.vectors)()
    assert report.stale_vectors_removed == len(before) and report.orphan_vectors_removed == 1
    assert set(world.vectors.all_vectors("history").values()) == {"c_turn_0"}


def test_concurrent_appends_of_one_turn_leave_row_and_vectors_agreeing(world) -> None:
    import threading

    append = append_uc(world)
    barrier = threading.Barrier(8)

    def write(i: int) -> None:
        barrier.wait()
        append(AppendTurnRequest("c", "user", f"version {i} " + "word " * (i * 20), 0))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    digest = world.store.get_turn("c", 0).content_hash
    versions = {vid.rsplit("::", 2)[-2] for vid in world.vectors.all_vectors("history")}
    assert versions == {digest[:12]}


def context_match(world, text: str):
    """The turn whose contextual vector is nearest to ``text``, and how near."""
    found = world.vectors.query(CONTEXT_COLLECTION, world.embedder.embed_query(text), 1)[0]
    return found.record_id, round(found.score, 6)


def test_a_turn_is_also_embedded_as_read_after_the_one_before(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "Where did you go on Friday?", 0))
    append(AppendTurnRequest("c", "assistant", "The lake, with my sister.", 1))
    assert context_match(world, "Where did you go on Friday?\nThe lake, with my sister.") == ("c_turn_1", 1.0)
    assert context_match(world, "Where did you go on Friday?") == ("c_turn_0", 1.0)  # nothing before: itself
    assert world.vectors.count(CONTEXT_COLLECTION) == 2 and world.vectors.count("history") == 2


def test_the_next_turn_is_read_again_when_the_one_before_arrives_or_changes(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "assistant", "The lake.", 1))
    assert context_match(world, "The lake.") == ("c_turn_1", 1.0)
    append(AppendTurnRequest("c", "user", "Where did you go?", 0))
    assert context_match(world, "Where did you go?\nThe lake.") == ("c_turn_1", 1.0)
    append(AppendTurnRequest("c", "user", "Where did you swim?", 0))
    assert context_match(world, "Where did you swim?\nThe lake.") == ("c_turn_1", 1.0)
    assert sorted(world.vectors.all_vectors(CONTEXT_COLLECTION).values()) == ["c_turn_0", "c_turn_1"]
    assert RepairStores(world.store, world.vectors)().stale_vectors_removed == 0


def test_a_failed_append_leaves_no_vectors_in_either_collection(world, monkeypatch) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "first", 0))

    def broken(*_args, **_kwargs):
        raise StorageError("Failed to store: disk full")

    monkeypatch.setattr(world.store, "put_turn", broken)
    with pytest.raises(StorageError):
        append(AppendTurnRequest("c", "assistant", "second", 1))
    assert set(world.vectors.all_vectors("history").values()) == {"c_turn_0"}
    assert set(world.vectors.all_vectors(CONTEXT_COLLECTION).values()) == {"c_turn_0"}


def test_repair_sweeps_contextual_vectors_of_turns_that_changed_or_vanished(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "version one", 0))
    before = dict(world.vectors.all_vectors(CONTEXT_COLLECTION))
    append(AppendTurnRequest("c", "user", "version two", 0))
    for vid, owner in before.items():  # a crash before the stale vectors went
        world.vectors.upsert(CONTEXT_COLLECTION, [VectorRecord(vid, owner, [1.0] + [0.0] * 63)])
    world.vectors.upsert(CONTEXT_COLLECTION, [VectorRecord("gone_turn_0::abc::0", "gone_turn_0", [1.0] + [0.0] * 63)])
    report = RepairStores(world.store, world.vectors)()
    assert report.stale_vectors_removed == len(before) and report.orphan_vectors_removed == 1
    assert set(world.vectors.all_vectors(CONTEXT_COLLECTION).values()) == {"c_turn_0"}


def test_a_reply_is_found_through_the_turn_it_answers(world) -> None:
    from domain.usecases.search import HybridSearch, SearchRequest
    from tests.conftest import searcher

    append = append_uc(world)
    for i, (role, text) in enumerate([("user", "Did you adopt the puppy from the shelter?"),
                                      ("assistant", "Yes, last Friday!"),
                                      ("user", "The weather was grey all week."),
                                      ("assistant", "I painted the kitchen yellow.")]):
        append(AppendTurnRequest("c", role, text, i))
    search = HybridSearch(searcher(world), world.store)
    hits = search(SearchRequest("When was the puppy adopted from the shelter?", 4, include_history=True)).hits
    reply = next(h for h in hits if h.id == "c_turn_1")
    assert reply.fields["signals"].get("contextual") in (1, 2), reply.fields["signals"]
    assert "semantic" not in reply.fields["signals"] or reply.fields["signals"]["semantic"] > 1
    spec = search(SearchRequest("When was the puppy adopted from the shelter?", 4, include_history=True,
                                profile="default")).hits
    assert all("contextual" not in h.fields["signals"] for h in spec)  # spec 004's profiles: three signals
