"""History use cases on the in-memory fakes."""

from __future__ import annotations

import pytest

from domain.errors import ValidationError
from domain.model import VectorRecord
from domain.usecases.history import AppendTurn, AppendTurnRequest, GetHistory
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
