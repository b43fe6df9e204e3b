"""History use cases on the in-memory fakes."""

from __future__ import annotations

import pytest

from domain.errors import StorageError, ValidationError
from domain.ids import version_of
from domain.model import VectorRecord
from domain.history.usecases import CONTEXT_COLLECTION, AppendTurn, AppendTurnRequest, GetHistory
from domain.search.usecases import HybridSearch, SearchRequest
from tests.conftest import searcher, synced


def append_uc(world, clock=None):
    kwargs = {"clock": clock} if clock else {}
    return AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer, **kwargs)


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
    assert len(synced(world).vectors.vectors_of("history", ["c_turn_0"])["c_turn_0"]) > 1
    result = append(AppendTurnRequest("c", "user", "brand new", 0))
    assert result.status == "replaced"
    assert world.store.get_turn("local", "c", 0).content == "brand new"
    assert len(world.vectors.vectors_of("history", ["c_turn_0"])["c_turn_0"]) > 1  # the old ones, until the sync
    assert world.store.oldest_queued() is not None
    digest = result.turn.content_hash[:12]
    for collection in ("history", CONTEXT_COLLECTION):
        assert [version_of(vid) for vid in synced(world).vectors.all_vectors(collection)] == [digest]


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
    assert world.store.turns == {} and world.store.oldest_queued() is None
    assert synced(world).vectors.count("history") == 0


def test_get_history_limits(world) -> None:
    get = GetHistory(world.store, world.policies)
    assert get("nobody").items == [] and get("nobody").next_cursor is None
    with pytest.raises(ValidationError, match="Limit must be between 1 and 50"):
        get("c", 51)
    with pytest.raises(ValidationError, match="conversation_id"):
        get("", 5)


def stray(owner: str, version: str = "abc") -> VectorRecord:
    """A vector the index holds but the store does not: left by a lost sync, or written straight in."""
    return VectorRecord(f"{owner}::{version}::0", owner, [1.0] + [0.0] * 63)


def test_stale_vectors_in_the_index_are_never_found_and_go_when_their_owner_is_synced(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "version one", 0))
    synced(world)
    old = {c: world.store.stored_vectors(c, "", 100) for c in ("history", CONTEXT_COLLECTION)}
    append(AppendTurnRequest("c", "user", "version two", 0))
    synced(world)
    for collection, records in old.items():  # an old version's vectors back in the index, and a turn
        world.vectors.upsert(collection, [*records, stray("c_turn_1")])  # that does not exist
    search = HybridSearch(searcher(world), world.store)
    for mode in ("vector", "hybrid"):
        hits = search(SearchRequest("version one", 5, include_history=True, mode=mode)).hits
        assert [(h.id, h.content) for h in hits] == [("c_turn_0", "version two")]
        assert hits[0].fields["similarity"] < 1.0  # "version two"'s own vector; v1's would say 1.0
    append(AppendTurnRequest("c", "user", "version three", 0))  # queues c_turn_0
    append(AppendTurnRequest("c", "assistant", "a reply", 1))  # queues c_turn_1
    current = {(t.id, t.content_hash[:12]) for t in world.store.turns.values()}
    for collection in ("history", CONTEXT_COLLECTION):
        assert {(owner, version_of(vid)) for vid, owner in synced(world).vectors.all_vectors(collection).items()
                } == current


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
    digest = world.store.get_turn("local", "c", 0).content_hash
    for collection in ("history", CONTEXT_COLLECTION):
        versions = {version_of(vid) for vid in synced(world).vectors.all_vectors(collection)}
        assert versions == {digest[:12]}


def context_match(world, text: str):
    """The turn whose contextual vector is nearest to ``text``, and how near (once the index caught up)."""
    found = synced(world).vectors.query(CONTEXT_COLLECTION, world.embedder.embed_query(text), 1)[0]
    return found.record_id, round(found.score, 6)


def test_a_turn_is_also_embedded_as_read_after_the_one_before(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "Where did you go on Friday?", 0))
    append(AppendTurnRequest("c", "assistant", "The lake, with my sister.", 1))
    assert context_match(world, "Where did you go on Friday?\nThe lake, with my sister.") == ("c_turn_1", 1.0)
    assert context_match(world, "Where did you go on Friday?") == ("c_turn_0", 1.0)  # nothing before: itself
    assert world.vectors.count(CONTEXT_COLLECTION) == 2 and world.vectors.count("history") == 2


def test_a_turn_is_read_alone_after_one_with_other_readers(world) -> None:
    """A turn opened to bob is not embedded with a private turn before it, nor the reverse."""
    from domain.access.privacy import Privacy

    SHARED = Privacy(visibility_scope="custom", visible_to=["bob"])  # noqa: N806 - a constant of the test
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "My salary is private.", 0))
    append(AppendTurnRequest("c", "user", "The sprint review moved.", 1, privacy=SHARED))
    assert context_match(world, "The sprint review moved.") == ("c_turn_1", 1.0)
    append(AppendTurnRequest("c", "user", "My salary is private.", 0, privacy=SHARED))
    assert context_match(world, "My salary is private.\nThe sprint review moved.") == ("c_turn_1", 1.0)
    assert append(AppendTurnRequest("c", "user", "My salary is private.", 0,
                                    privacy=SHARED)).status == "unchanged"


def test_the_next_turn_is_read_again_when_the_one_before_arrives_or_changes(world) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "assistant", "The lake.", 1))
    assert context_match(world, "The lake.") == ("c_turn_1", 1.0)
    append(AppendTurnRequest("c", "user", "Where did you go?", 0))
    assert context_match(world, "Where did you go?\nThe lake.") == ("c_turn_1", 1.0)
    append(AppendTurnRequest("c", "user", "Where did you swim?", 0))
    assert context_match(world, "Where did you swim?\nThe lake.") == ("c_turn_1", 1.0)
    assert sorted(world.vectors.all_vectors(CONTEXT_COLLECTION).values()) == ["c_turn_0", "c_turn_1"]
    current = {(t.id, t.content_hash[:12]) for t in world.store.turns.values()}
    for collection in ("history", CONTEXT_COLLECTION):  # no vector of an older version is left
        assert {(owner, version_of(vid)) for vid, owner in world.vectors.all_vectors(collection).items()
                } == current


def test_a_failed_append_leaves_no_vectors_in_either_collection(world, monkeypatch) -> None:
    append = append_uc(world)
    append(AppendTurnRequest("c", "user", "first", 0))

    def broken(*_args, **_kwargs):
        raise StorageError("Failed to store: disk full")

    monkeypatch.setattr(world.store, "put_turn", broken)
    with pytest.raises(StorageError):
        append(AppendTurnRequest("c", "assistant", "second", 1))
    synced(world)
    for collection in ("history", CONTEXT_COLLECTION):
        assert world.store.count_vectors(collection) == 1
        assert set(world.vectors.all_vectors(collection).values()) == {"c_turn_0"}


def test_a_reply_is_found_through_the_turn_it_answers(world) -> None:
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


def test_a_conversation_id_another_caller_took_answers_as_an_unused_one(world) -> None:
    """Bob's append into alice's conversation id is his own new conversation: the same answer as for an id
    nobody used (turn 0 included: no "already stored"), and alice's conversation is untouched."""
    from domain.access.principal import Principal, RequestContext
    from domain.access.privacy import Privacy
    from domain.ids import turn_id

    alice, bob = RequestContext(Principal("alice", teams=("eng",))), RequestContext(Principal("bob", teams=("eng",)))

    def append(who, *args, **kwargs):
        return AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer,
                          identity=lambda: who, clock=lambda: "2026-01-01T00:00:00Z")(AppendTurnRequest(*args, **kwargs))

    append(alice, "alice-conv", "user", "Alice's plan for the offsite.", 0)
    append(alice, "alice-conv", "user", "Booked the team dinner.", 1, privacy=Privacy(visibility_scope="team"))
    before = dict(world.store.turns)
    taken = append(bob, "alice-conv", "user", "Bob's own words.", 0)
    unused = append(bob, "never-used", "user", "Bob's own words.", 0)
    assert (taken.status, unused.status) == ("appended", "appended")
    assert taken.turn.id == turn_id("alice-conv", 0, "bob") and unused.turn.id == turn_id("never-used", 0, "bob")
    assert {k: v for k, v in world.store.turns.items() if k[0] == "alice"} == {
        k: v for k, v in before.items() if k[0] == "alice"}
    mine = GetHistory(world.store, world.policies, identity=lambda: bob)("alice-conv")
    assert [t.content for t in mine] == ["Bob's own words."]
    theirs = GetHistory(world.store, world.policies, identity=lambda: bob)("alice-conv", owner="alice")
    assert [t.content for t in theirs] == ["Booked the team dinner."]  # only what alice shares with him
    nobody = GetHistory(world.store, world.policies, identity=lambda: bob)("alice-conv", owner="carol")
    assert list(nobody) == [] and nobody.next_cursor is None
    assert [t.content for t in GetHistory(world.store, world.policies, identity=lambda: alice)("alice-conv")] == [
        "Alice's plan for the offsite.", "Booked the team dinner."]
    with pytest.raises(ValidationError) as refused:
        GetHistory(world.store, world.policies, identity=lambda: bob)("alice-conv", owner="not a user")
    assert refused.value.field == "owner"
