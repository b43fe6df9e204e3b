"""Listing conversations (ListConversations): by id, page by page, each counted as its caller sees it;
one with no turn the caller may see is not listed, and paging never splits a conversation."""

from __future__ import annotations

import pytest

import domain.history.listing as listing
from domain.access.principal import Principal, RequestContext
from domain.access.privacy import Privacy
from domain.errors import ValidationError
from domain.history.listing import ListConversations
from domain.history.usecases import AppendTurn, AppendTurnRequest
from plugins.privacy.allow_all import AllowAllPolicy

LOCAL = RequestContext(Principal("local", clearance="sensitive"))
BOB = RequestContext(Principal("bob"))


def append(world, conversation: str, index: int, who=LOCAL, privacy: Privacy = Privacy()) -> None:
    AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer, identity=lambda: who)(
        AppendTurnRequest(conversation, "user", f"turn {index} of {conversation}", index,
                          f"2026-01-0{1 + index % 9}T00:00:00Z", privacy))


def every(lister: ListConversations, limit: int) -> list[tuple[str, int]]:
    page = lister(limit)
    rows = [(c.conversation_id, c.turns) for c in page]
    while page.next_cursor:
        page = lister(limit, page.next_cursor)
        rows += [(c.conversation_id, c.turns) for c in page]
    return rows


def test_conversations_page_by_id_whole_whatever_the_batch(world, monkeypatch) -> None:
    monkeypatch.setattr(listing, "BATCH", 3)  # batches end inside conversations
    for conversation, turns in (("c2", 4), ("c1", 2), ("c3", 1), ("c10", 5)):
        for i in range(turns):
            append(world, conversation, i)
    lister = ListConversations(world.store, [AllowAllPolicy()], identity=lambda: LOCAL)
    expected = [("c1", 2), ("c10", 5), ("c2", 4), ("c3", 1)]
    assert every(lister, 100) == expected == every(lister, 1) == every(lister, 3)
    first = lister(2)
    assert [c.conversation_id for c in first] == ["c1", "c10"] and first.next_cursor
    c10 = list(first)[1]
    assert (c10.first_ts, c10.last_ts, c10.last.turn_index) == ("2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z", 4)


def test_only_what_the_caller_sees_is_listed_and_counted(world) -> None:
    append(world, "mine", 0)
    append(world, "shared", 0, privacy=Privacy(visibility_scope="custom", visible_to=["bob"]))
    append(world, "shared", 1)  # the owner's alone
    assert every(ListConversations(world.store, [AllowAllPolicy()], identity=lambda: BOB), 10) == [("shared", 1)]
    assert every(ListConversations(world.store, [AllowAllPolicy()], identity=lambda: LOCAL), 10) == [
        ("mine", 1), ("shared", 2)]


@pytest.mark.parametrize(("limit", "cursor", "field"), [(0, None, "limit"), (101, None, "limit"),
                                                       (10, "bogus", "cursor")])
def test_bad_paging_is_refused_by_name(world, limit, cursor, field) -> None:
    with pytest.raises(ValidationError) as refused:
        ListConversations(world.store, [], identity=lambda: LOCAL)(limit, cursor)
    assert refused.value.field == field


def test_two_owners_conversations_of_one_id_are_listed_apart_and_paged_whole(world, monkeypatch) -> None:
    """A conversation id is each owner's own: bob's "shared" beside the local owner's (opened to him), each
    with its owner, counted apart; a page never splits either."""
    monkeypatch.setattr(listing, "BATCH", 2)
    for i in range(3):
        append(world, "shared", i, privacy=Privacy(visibility_scope="custom", visible_to=["bob"]))
    for i in range(2):
        append(world, "shared", i, who=BOB)
    append(world, "zeta", 0, who=BOB)
    lister = ListConversations(world.store, [AllowAllPolicy()], identity=lambda: BOB)
    rows, page = [], lister(1)
    while True:
        rows += [(c.conversation_id, c.owner, c.turns) for c in page]
        if not page.next_cursor:
            break
        page = lister(1, page.next_cursor)
    assert rows == [("shared", "bob", 2), ("shared", "local", 3), ("zeta", "bob", 1)]
    assert [(c.conversation_id, c.owner) for c in ListConversations(
        world.store, [AllowAllPolicy()], identity=lambda: LOCAL)(10)] == [("shared", "local")]  # bob's are his
