"""Reading the audit log (ReadAudit): the data dir's owner reads every entry, anyone else only their own;
filters by actor, action, kind, client and time; bad input by field."""

from __future__ import annotations

import pytest

from adapters.memory.basics import InMemoryMetadataStore
from domain.access.audit import AuditQuery, ReadAudit
from domain.access.principal import Principal, RequestContext
from domain.errors import ValidationError
from domain.model import AuditEntry


def log() -> InMemoryMetadataStore:
    store = InMemoryMetadataStore()
    for n, (actor, action, kind, via) in enumerate((
            ("local", "store", "memory", None), ("bob", "store", "memory", "tok_aaaaaaaaaaaa"),
            ("bob", "delete", "artifact", "page (tok_aaaaaaaaaaaa)"), ("carol", "denied", "memory", "tok_bbbbbbbbbbbb"),
            ("local", "edit", "memory", None))):
        store.append(AuditEntry(action=action, collection=kind, item_ids=(f"id{n}",), actor=actor,
                                ts=f"2026-01-0{n + 1}T00:00:00Z", detail={"via": via} if via else {}))
    return store


def read(who: str, **query: object) -> list[str]:
    reader = ReadAudit(log(), identity=lambda: RequestContext(Principal(who)))
    return [e.item_ids[0] for e in reader(AuditQuery(**query))]


def test_the_owner_reads_everything_newest_first_and_others_their_own() -> None:
    assert read("local") == ["id4", "id3", "id2", "id1", "id0"]
    assert read("bob") == ["id2", "id1"] and read("bob", actor="carol") == ["id2", "id1"]  # never another's
    assert read("dave") == []
    assert ReadAudit(log(), identity=lambda: RequestContext(Principal("bob"))).actors() == ["bob"]
    assert ReadAudit(log(), identity=lambda: RequestContext(Principal("local"))).actors() == ["bob", "carol", "local"]


def test_filters() -> None:
    assert read("local", actor="bob") == ["id2", "id1"]
    assert read("local", action="store") == ["id1", "id0"] and read("local", collection="artifact") == ["id2"]
    assert read("local", via="tok_aaaaaaaaaaaa") == ["id2", "id1"]  # its own calls and the page's with it
    assert read("local", since="2026-01-02", until="2026-01-04") == ["id2", "id1"]
    assert read("local", limit=2) == ["id4", "id3"]


@pytest.mark.parametrize(("query", "field"), [({"limit": 0}, "limit"), ({"since": "yesterday"}, "since"),
                                              ({"until": "2026-13-01"}, "until")])
def test_bad_input_names_its_field(query: dict, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        read("local", **query)
    assert refused.value.field == field
