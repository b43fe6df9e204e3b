"""ListArtifacts and StoreCounts on the in-memory store: paging, bad input named, the access rule."""

from __future__ import annotations

import dataclasses

import pytest

from adapters.memory.scopes import InMemoryStore
from domain.access.principal import Principal, RequestContext
from domain.artifacts.catalog import ListArtifacts, StoreCounts
from domain.errors import ValidationError
from tests.contract.artifact_scopes_contract import begin, entry, labelled


def put(store: InMemoryStore, aid: str, ts: str, **fields: object) -> None:
    a = dataclasses.replace(labelled(aid, ts=ts, source="files"), source_id=f"/n/{aid}.md", **fields)
    begin(store, a)
    store.commit_artifact(aid, a.version, entry("ingested", aid))


def test_pages_newest_first_until_the_last() -> None:
    store = InMemoryStore()
    for i in range(5):
        put(store, f"art_{i}", f"2025-01-0{i + 1}T00:00:00Z")
    listing = ListArtifacts(store, now=lambda: 1e9)
    first = listing(limit=2)
    assert [a.id for a in first] == ["art_4", "art_3"] and first.next_cursor
    second = listing(limit=2, cursor=first.next_cursor)
    third = listing(limit=2, cursor=second.next_cursor)
    assert [a.id for a in second] == ["art_2", "art_1"] and [a.id for a in third] == ["art_0"]
    assert third.next_cursor is None
    with pytest.raises(ValidationError) as bad:
        listing(source_system="other", cursor=first.next_cursor)  # a cursor of another listing
    assert bad.value.field == "cursor"


@pytest.mark.parametrize("arguments, field", [({"limit": 0}, "limit"), ({"limit": 501}, "limit"),
                                              ({"artifact_type": "pdf"}, "artifact_type"),
                                              ({"source_system": "x" * 501}, "source_system"),
                                              ({"source_id_prefix": 7}, "source_id_prefix"),
                                              ({"cursor": "not-a-cursor"}, "cursor")])
def test_bad_input_names_its_field(arguments: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as bad:
        ListArtifacts(InMemoryStore())(**arguments)
    assert bad.value.field == field


def test_only_what_the_caller_may_see_is_listed_or_counted() -> None:
    store = InMemoryStore()
    put(store, "art_mine", "2025-01-01T00:00:00Z", owner="bob", acl=("u:bob",))
    put(store, "art_hers", "2025-01-02T00:00:00Z", owner="alice", acl=("u:alice",))
    bob = RequestContext(Principal("bob"))
    assert [a.id for a in ListArtifacts(store, identity=lambda: bob, now=lambda: 1e9)()] == ["art_mine"]
    counts = StoreCounts(store, identity=lambda: bob, now=lambda: 1e9)()
    assert counts["artifacts"]["by_source"] == {"files": 1} and "database_bytes" not in counts  # not the owner's
    owner = StoreCounts(store, now=lambda: 1e9)()  # the local owner: its own items, and the sizes
    assert owner["artifacts"]["by_source"] == {} and owner["database_bytes"] >= 0
