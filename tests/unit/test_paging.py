"""memory_list and history_get page through everything with cursors; bad cursors name the field."""

from __future__ import annotations

import pytest

from domain.errors import ValidationError
from domain.paging import encode_cursor
from domain.history.usecases import AppendTurn, AppendTurnRequest, GetHistory
from domain.memories.usecases import ListMemories, StoreMemory, StoreMemoryRequest


def test_memory_list_pages_through_everything_once(world) -> None:
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer,
                        clock=iter(f"2025-01-01T00:00:{i // 3:02d}Z" for i in range(100)).__next__)
    stored = [store(StoreMemoryRequest(f"fact number {i}", "fact", 0.5)).id for i in range(23)]
    listing = ListMemories(world.store, world.policies)
    seen, cursor, pages = [], None, 0
    while True:
        page = listing(limit=5, cursor=cursor)
        seen += [h.id for h in page]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 5 and len(seen) == len(set(seen)) == 23 and set(seen) == set(stored)
    assert listing(limit=23).next_cursor is None and listing(limit=22).next_cursor is not None


def test_history_pages_back_to_the_first_turn(world) -> None:
    append = AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer)
    for i in range(12):
        append(AppendTurnRequest("c1", "user", f"turn {i}", i))
    get = GetHistory(world.store, world.policies)
    page = get("c1", 5)
    assert [t.turn_index for t in page] == [7, 8, 9, 10, 11]
    older = get("c1", 5, page.next_cursor)
    assert [t.turn_index for t in older] == [2, 3, 4, 5, 6]
    oldest = get("c1", 5, older.next_cursor)
    assert [t.turn_index for t in oldest] == [0, 1] and oldest.next_cursor is None


@pytest.mark.parametrize("cursor", ["", "not base64 !", encode_cursor("history:c1", [3]), "x" * 501, 42,
                                    encode_cursor("memories:", ["only one"])])
def test_a_bad_cursor_names_the_field(world, cursor) -> None:
    with pytest.raises(ValidationError) as raised:
        ListMemories(world.store, world.policies)(limit=5, cursor=cursor)
    assert raised.value.field == "cursor"


def test_a_cursor_of_another_conversation_is_refused(world) -> None:
    with pytest.raises(ValidationError) as raised:
        GetHistory(world.store, world.policies)("c2", 5, encode_cursor("history:c1", [3]))
    assert raised.value.field == "cursor"
