"""memory_changes on the fakes: pages of what the caller may see (another caller's private changes are
skipped, and never end a page early), and bad input named by field."""

from __future__ import annotations

import dataclasses

import pytest

from adapters.memory.scopes import InMemoryStore
from domain.access.principal import Principal, RequestContext
from domain.changes.usecases import MemoryChanges
from domain.errors import ValidationError
from domain.model import AuditEntry
from tests.contract.metadata_store_contract import memory

ME = RequestContext(Principal("local"))


def filled() -> InMemoryStore:
    store = InMemoryStore()
    for n in range(12):
        theirs = n % 3 == 0
        item = dataclasses.replace(memory(f"mem_{n:02d}"), owner="bob" if theirs else "local",
                                   acl=("u:bob",) if theirs else ("u:local",))
        store.add_memory(item, AuditEntry("store", "memory", (item.id,), "x", f"2025-01-01T00:00:{n:02d}Z", {}))
    return store


def test_pages_hold_only_what_the_caller_may_see() -> None:
    ask = MemoryChanges(filled(), identity=lambda: ME)
    seen, cursor = [], None
    while True:
        page, cursor = ask("2025-01-01", limit=3, cursor=cursor)
        assert len(page) == 3 or cursor is None
        seen += [c.item_id for c in page]
        if cursor is None:
            break
    assert seen == [f"mem_{n:02d}" for n in range(12) if n % 3]
    assert [c.item_id for c in ask("2025-01-01T00:00:04Z", "2025-01-01T00:00:07Z")[0]] == ["mem_04", "mem_05",
                                                                                            "mem_07"]


@pytest.mark.parametrize(("arguments", "field"), [
    ({"since": "yesterday"}, "since"), ({"since": "2025-01-02", "until": "2025-01-01"}, "until"),
    ({"since": "2025-01-01", "kinds": ["moved"]}, "kinds"), ({"since": "2025-01-01", "collections": []}, "collections"),
    ({"since": "2025-01-01", "limit": 501}, "limit"), ({"since": "2025-01-01", "cursor": "nonsense"}, "cursor")])
def test_bad_input_is_named(arguments, field) -> None:
    with pytest.raises(ValidationError) as refused:
        MemoryChanges(InMemoryStore(), identity=lambda: ME)(**arguments)
    assert refused.value.field == field
