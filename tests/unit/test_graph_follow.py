"""The background graph on the fakes (domain/graph/follow.py) with build_graph's stand-in extractor: it
follows memories and turns as they are written, reads a burst in batches and each record once, forgets
what is deleted or edited away, resumes from its durable cursor after a crash without doubling anything,
holds one worker per store, waits for a skipped sequence number, and keeps each owner's graph their own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from domain.access.principal import Principal, RequestContext
from domain.access.privacy import Privacy
from domain.graph.build import BuildGraph
from domain.graph.follow import GRACE, FollowGraph, background_principal
from domain.history.usecases import AppendTurn, AppendTurnRequest
from domain.memories.edit import EditMemory, MemoryChange
from domain.memories.usecases import DeleteMemory, StoreMemory, StoreMemoryRequest
from tests.unit.test_graph_build import ME, OTHER, Capitals, builder, remember


def follower(world, extractor: Capitals, **kwargs) -> FollowGraph:
    return FollowGraph(builder(world, extractor), world.store, background_principal("sensitive"), **kwargs)


def say(world, conversation: str, index: int, text: str, who: RequestContext = ME) -> None:
    AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer, identity=lambda: who)(
        AppendTurnRequest(conversation, "user", text, index))


def names(world, owner: str = "local") -> set[str]:
    return {e.name for e in world.store.entities(owner)}


def cited(world, name: str, owner: str = "local") -> list[tuple[str, str]]:
    """The records the graph holds as evidence that ``name`` was mentioned, one entry per mention held."""
    return [(kind, record) for who, facts in world.store.graph_evidence.items() if who == owner
            for fact, (kind, record), _, _ in facts if fact == ("e", name)]


def drain(follow: FollowGraph) -> None:
    while follow.step().moved:
        pass


def test_memories_and_turns_are_read_as_they_are_written_and_once(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    assert follow.behind() == 0 and follow.step().changes == 0
    remember(world, "Alice met Bob in Paris.")
    say(world, "c1", 0, "Carol lives in Rome.")
    assert follow.behind() == 2
    done = follow.step()
    assert (done.changes, done.read, done.moved) == (2, 2, True)
    assert names(world) == {"Alice", "Bob", "Paris", "Carol", "Rome"} and follow.behind() == 0
    assert follow.report()["current"] is True
    read = len(extractor.read)
    assert follow.step().changes == 0 and len(extractor.read) == read  # nothing new: nothing read
    # build_graph after the background: every record's digest is held, so it reads none
    again = builder(world, extractor)()
    assert (again.total, again.skipped) == (0, 2) and len(extractor.read) == read


def test_a_burst_is_read_in_batches_and_a_record_changed_often_once(world) -> None:
    extractor = Capitals()
    calls: list[int] = []
    original = extractor.extract
    extractor.extract = lambda passages: (calls.append(len(passages)), original(passages))[1]  # type: ignore[method-assign]
    for i in range(70):
        say(world, "burst", i, f"Turn {i} names Person{i}.")
    for text in ("Dana cooks.", "Dana bakes.", "Dana sings in Oslo."):  # turn 0 replaced three times
        say(world, "burst", 0, text)
    follow = follower(world, extractor, page=500)
    done = follow.step()
    assert done.changes == 73 and done.read == 70 and calls == [32, 32, 6]
    assert {"Dana", "Oslo"} <= names(world) and "Person0" not in names(world)
    assert extractor.read.count(world.store.get_turn("local", "burst", 0).id) == 1


def test_a_page_at_a_time_until_current(world) -> None:
    extractor = Capitals()
    for i in range(12):
        say(world, "paged", i, f"Turn about Name{i}.")
    follow = follower(world, extractor, page=5)
    taken = []
    while (done := follow.step()).moved:
        taken.append(done.changes)
    assert taken[:3] == [5, 5, 2] and follow.behind() == 0 and len(extractor.read) == 12  # then the graph's own


def test_a_delete_or_an_edit_takes_the_records_evidence_away(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    gone = remember(world, "Alice met Bob in Paris.")
    kept = remember(world, "Alice works in Lyon.")
    drain(follow)
    assert cited(world, "Alice") == [("memory", gone), ("memory", kept)]
    DeleteMemory(world.store, identity=lambda: ME)(gone)
    drain(follow)
    assert cited(world, "Alice") == [("memory", kept)] and not ({"Bob", "Paris"} & names(world))
    EditMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: ME)(
        kept, MemoryChange(content="Erin works in Lyon."))
    drain(follow)
    assert "Alice" not in names(world) and cited(world, "Erin") == [("memory", kept)]


def test_a_record_deleted_while_it_was_read_is_forgotten_by_the_next_round(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    first = remember(world, "Alice met Bob.")
    original = extractor.extract

    def racing(passages):  # the memory is deleted while the extractor reads it
        found = original(passages)
        DeleteMemory(world.store, identity=lambda: ME)(first)
        return found

    extractor.extract = racing  # type: ignore[method-assign]
    follow.step()
    assert "Alice" in names(world)  # written after the delete's own forgetting...
    extractor.extract = original  # type: ignore[method-assign]
    drain(follow)
    assert names(world) == set() and cited(world, "Alice") == []  # ...and forgotten by the delete's change


def test_a_superseded_memory_keeps_its_history_and_the_new_version_is_read(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    old = remember(world, "Alice lives in Paris.")
    drain(follow)
    new = StoreMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: ME)(
        StoreMemoryRequest(content="Alice lives in Berlin.", type="fact", confidence=1.0, supersedes=old)).id
    drain(follow)
    assert cited(world, "Alice") == [("memory", old), ("memory", new)] and cited(world, "Berlin") == [("memory", new)]
    assert extractor.read.count(old) == 1  # the old version is not read again for being ended


def town(i: int) -> str:
    return f"Town{chr(97 + i % 26)}{chr(97 + i // 26)}"


class Killed(BaseException):
    """What a kill -9 is to the round: nothing after it runs."""


def test_a_crash_mid_round_resumes_from_the_cursor_with_nothing_doubled(world) -> None:
    extractor = Capitals()
    for i in range(40):
        say(world, "crash", i, f"{('Ann', 'Ben', 'Cyd')[i % 3]} visited {town(i)}.")
    original, calls = extractor.extract, []

    def dying(passages):
        calls.append(len(passages))
        if len(calls) == 2:
            raise Killed()
        return original(passages)

    extractor.extract = dying  # type: ignore[method-assign]
    with pytest.raises(Killed):
        follower(world, extractor).step()
    assert world.store.follow_state() is None and len(extractor.read) == 32  # the first batch is in, the cursor not
    extractor.extract = original  # type: ignore[method-assign]
    restarted = follower(world, extractor)  # a new process: a new holder, the old lease held until it lapses
    assert restarted.step().changes == 0
    world.store.follow_lease = ("", 0.0)  # the lease lapsed
    drain(restarted)
    assert len(extractor.read) == 40 and restarted.behind() == 0  # the first 32 were not read again
    assert all(len(cited(world, town(i))) == 1 for i in range(40))
    assert len(cited(world, "Ann")) == 14 and names(world) == {"Ann", "Ben", "Cyd", *(town(i) for i in range(40))}


def test_an_idle_worker_writes_nothing(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    remember(world, "Alice met Bob.")
    drain(follow)
    state, lease = world.store.follow_state(), world.store.follow_lease
    assert follow.step() == follow.step() and follow.step().changes == 0
    assert (world.store.follow_state(), world.store.follow_lease) == (state, lease)  # not even the lease


def test_one_worker_per_store(world) -> None:
    extractor = Capitals()
    first, second = follower(world, extractor), follower(world, extractor)
    remember(world, "Alice met Bob.")
    assert first.step().read == 1
    remember(world, "Carol met Dan.")
    assert second.step().changes == 0 and second.behind() == 1  # the first holds the lease
    assert first.step().read == 1


class Hiding:
    """The store's feed with one change not yet visible (PostgreSQL: its transaction is still open)."""

    def __init__(self, store, hidden: int) -> None:
        self.store, self.hidden = store, {hidden}

    def changes_after(self, seq, limit):
        return [w for w in self.store.changes_after(seq, 10_000) if w[0] not in self.hidden][:limit]

    def changes_at(self, seqs, collections):
        return [w for w in self.store.changes_at(seqs, collections) if w[0] not in self.hidden]

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_a_change_committed_after_a_later_one_is_still_read(world) -> None:
    extractor = Capitals()
    remember(world, "Alice met Bob.")
    remember(world, "Carol met Dan.")
    late = world.store.changes_after(0, 10)[0][0]
    feed = Hiding(world.store, late)
    clock = [1000.0]
    follow = FollowGraph(builder(world, extractor), feed, background_principal("sensitive"), now=lambda: clock[0])
    follow.step()
    assert names(world) == {"Carol", "Dan"} and world.store.follow_state()["holes"] == {str(late): 1000.0}
    feed.hidden.clear()
    clock[0] += 1
    follow.step()
    assert names(world) == {"Alice", "Bob", "Carol", "Dan"} and world.store.follow_state()["holes"] == {}
    # a number never committed (a rolled-back transaction) is given up after GRACE seconds
    remember(world, "Erin met Finn.")
    remember(world, "Gus met Hal.")
    never = world.store.changes_after(0, 100)[-2][0]
    feed.hidden.add(never)
    follow.step()
    assert str(never) in world.store.follow_state()["holes"]
    clock[0] += GRACE + 1
    follow.step()
    assert world.store.follow_state()["holes"] == {}


def test_each_owner_gets_their_own_records_as_they_may_read_them(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    remember(world, "Alice met Bob.")
    remember(world, "Carol met Dan.", who=OTHER)
    cleared = RequestContext(Principal("local", clearance="highly_sensitive"))  # a token of the local user
    remember(world, "Secret Eve.", who=cleared, privacy=Privacy(sensitivity="highly_sensitive"))
    say(world, "shared", 0, "Gina met Hugo.", who=OTHER)
    drain(follow)
    assert names(world) == {"Alice", "Bob"}  # above the local owner's clearance: not read
    assert names(world, "bob") == {"Carol", "Dan", "Gina", "Hugo"}


def test_documents_are_followed_only_when_asked(world) -> None:
    extractor = Capitals()
    follow = follower(world, extractor)
    assert follow.collections == ("memory", "turn")
    assert follower(world, extractor, documents=True).collections == ("memory", "turn", "artifact")
