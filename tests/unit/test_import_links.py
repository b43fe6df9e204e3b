"""An import's supersession links checked as a whole before anything is written (issue 41.5), the id an
import stores a memory under (41.3: never another's, never telling), the strict ``check`` (41.12) and a
non-finite confidence named (41.14), on the in-memory fakes; and memory_history ending at a repeat."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from domain.access.principal import Principal, RequestContext
from domain.errors import ValidationError
from domain.memories.usecases import MemoryHistory, StoreMemoryRequest
from domain.transfer.links import UNKNOWN, Link, problems
from domain.transfer.owned import derived
from tests.unit.test_transfer import everything, tools

NOW = time.time()
A, B, C, D = ("mem_" + ch * 32 for ch in "abcd")


def memory(memory_id: str, content: str, ts: str = "2025-01-01T00:00:00Z", **links: Any) -> dict[str, Any]:
    return {"kind": "memory", "id": memory_id, "type": "fact", "confidence": 0.9, "ts": ts, "conversation_id": None,
            "sensitivity": "normal", "visibility_scope": "me", "retention_policy": "forever", "content": content,
            **links}


def pair(old: str = A, new: str = B) -> list[dict[str, Any]]:
    """A memory and the one that replaced it, as an export writes them (newest first)."""
    return [memory(new, "Ana likes coffee.", "2025-06-01T00:00:00Z", supersedes=old),
            memory(old, "Ana likes tea.", valid_to="2025-06-01T00:00:00Z", superseded_by=new)]


def tables(world) -> dict[str, Any]:
    """Everything the fake store holds that an import could change."""
    store = world.store
    return {name: repr(getattr(store, name)) for name in sorted(vars(store)) if not name.startswith("_")}


BROKEN = [
    ("itself", [memory(A, "Loops.", supersedes=A)], 2, "supersedes", "the memory itself"),
    ("itself-by", [memory(A, "Loops.", valid_to="2025-02-01T00:00:00Z", superseded_by=A)], 2, "superseded_by",
     "the memory itself"),
    ("two-cycle", [memory(A, "One.", supersedes=B, superseded_by=B, valid_to="2025-02-01T00:00:00Z"),
                   memory(B, "Two.", supersedes=A, superseded_by=A, valid_to="2025-02-01T00:00:00Z")], 2,
     "superseded_by", "cannot replace each other"),
    ("three-cycle", [memory(A, "One.", supersedes=C, superseded_by=B, valid_to="2025-02-01T00:00:00Z"),
                     memory(B, "Two.", supersedes=A, superseded_by=C, valid_to="2025-02-01T00:00:00Z"),
                     memory(C, "Three.", supersedes=B, superseded_by=A, valid_to="2025-02-01T00:00:00Z")], 2,
     "supersedes", "cycle"),
    ("superseded-by-nothing", [memory(A, "Hidden?", valid_to="2025-02-01T00:00:00Z", superseded_by=B)], 2,
     "superseded_by", "neither a memory of this import nor one you stored"),
    ("not-naming-each-other", [memory(B, "Coffee.", supersedes=A), memory(A, "Tea.")], 2, "supersedes",
     "must name each other"),
    ("ends-before-it-begins", [memory(A, "Backwards.", valid_from="2025-03-01T00:00:00Z",
                                      valid_to="2025-02-01T00:00:00Z")], 2, "valid_to", "before"),
    ("superseded-without-end", [memory(B, "Coffee.", supersedes=A), memory(A, "Tea.", superseded_by=B)], 3,
     "valid_to", "valid_to"),
]


@pytest.mark.parametrize("records, line, field, words", [case[1:] for case in BROKEN], ids=[c[0] for c in BROKEN])
def test_a_broken_history_is_refused_whole_naming_its_line_and_field(aworld, records, line, field, words) -> None:
    *_, restore = tools(aworld)
    before = tables(aworld)
    for check in (True, False):
        with pytest.raises(ValidationError) as refused:
            restore([memory(D, "A fine memory first."), *records], check=check)
        assert refused.value.field == field, refused.value.message
        assert refused.value.message.startswith(f"line {line}: ") and words in refused.value.message
        assert refused.value.message.endswith("nothing was imported")
    assert tables(aworld) == before


def test_a_whole_history_comes_in_split_over_calls_with_linked(aworld) -> None:
    *_, export, restore = tools(aworld)
    newer, older = pair()
    with pytest.raises(ValidationError) as refused:
        restore([older], first_line=3, check=True)  # alone, its successor is nowhere
    assert refused.value.field == "superseded_by"
    assert restore([newer], first_line=2, check=True, linked=[A])["added"] == 1
    assert restore([older], first_line=3, check=True, linked=[B])["added"] == 1
    assert everything(export) == []
    restore([newer], first_line=2, linked=[A])
    restore([older], first_line=3, linked=[B])
    back = aworld.store.get_memories([A, B])
    assert (back[A].superseded_by, back[B].supersedes) == (B, A)
    assert restore(pair()) == {"added": 0, "unchanged": 2, "expired": 0}


def test_a_link_to_a_stored_memory_must_be_answered_by_it(aworld) -> None:
    memory_tool, *_, restore = tools(aworld)
    newer, older = pair()
    restore([memory(A, "Ana likes tea.")])  # stored current, without a successor
    with pytest.raises(ValidationError) as refused:
        restore([newer])
    assert refused.value.field == "supersedes" and "superseded_by is not set" in refused.value.message
    with pytest.raises(ValidationError) as refused:
        restore([newer, older])  # the file's older version is stored already, as current: what stays
    assert refused.value.field == "supersedes"


def test_the_whole_file_check_sees_pairs_across_calls() -> None:
    """What the command line runs over a file's links (UNKNOWN: not in the file, checked by the calls)."""
    file = {A: Link(A, superseded_by=B, valid_to="2025-02-01T00:00:00Z", line=9),
            B: Link(B, supersedes=C, line=2)}
    found = list(problems(list(file.values()), lambda m: file.get(m, UNKNOWN)))
    assert [(link.line, field) for link, field, _ in found] == [(9, "superseded_by"), ]
    assert "whose supersedes is mem_ccc" in found[0][2]


def test_another_callers_memory_id_is_never_touched_nor_told(aworld) -> None:
    """Bob imports a record under Alice's memory id and one under an id nobody holds: both are stored the
    same way (under ids of his own), with the same answers; Alice's memory is as it was."""
    alices_memory, *_ = tools(aworld, "alice")
    alices = alices_memory(StoreMemoryRequest("Alice's secret plan.", "fact", 1.0))
    before = aworld.store.get_memories([alices.id])[alices.id]
    *_, bobs_export, bob = tools(aworld, "bob")
    taken, free = memory(alices.id, "Bob's note."), memory(C, "Bob's other note.")
    answers = [bob([record], check=check) for check in (True, False) for record in (taken, free)]
    assert all(a == {"added": 1, "unchanged": 0, "expired": 0} for a in answers)
    assert aworld.store.get_memories([alices.id])[alices.id] == before
    assert {r["id"] for r in everything(bobs_export)} == {derived("bob", alices.id), derived("bob", C)}
    assert bob([taken, free]) == {"added": 0, "unchanged": 2, "expired": 0}  # again: nothing new
    for record in (taken, free):  # another text under either id: the same refusal, naming Bob's own
        with pytest.raises(ValidationError) as refused:
            bob([{**record, "content": "Changed."}])
        assert refused.value.message == (f"line 1: memory {record['id']} (yours as {derived('bob', record['id'])}) "
                                         "is already stored with other content (field id): nothing was imported")
    # Bob's own export comes back under its own ids; links follow the ids.
    records = everything(bobs_export)
    assert bob(records)["unchanged"] == 2
    *_, carols_export, carol = tools(aworld, "carol")
    assert carol(pair(alices.id, C))["added"] == 2
    stored = {r["content"]: r for r in everything(carols_export)}
    assert stored["Ana likes tea."]["superseded_by"] == stored["Ana likes coffee."]["id"] == derived("carol", C)


def test_the_local_owner_keeps_free_ids_and_never_takes_anothers(aworld) -> None:
    bobs_memory, *_ = tools(aworld, "bob")
    bobs = bobs_memory(StoreMemoryRequest("Bob's.", "fact", 1.0))
    *_, export, restore = tools(aworld)
    assert restore([memory(A, "Mine."), memory(bobs.id, "Mine too.")])["added"] == 2
    assert {r["id"] for r in everything(export)} == {A, derived("local", bobs.id)}
    assert aworld.store.get_memories([bobs.id])[bobs.id].content == "Bob's."


@pytest.mark.parametrize("check", [0, 1, [], {}, "", "false", None])
def test_check_takes_only_true_or_false(aworld, check) -> None:
    *_, export, restore = tools(aworld)
    with pytest.raises(ValidationError) as refused:
        restore([memory(A, "One.")], check=check)
    assert refused.value.field == "check" and "true or false" in refused.value.message
    assert everything(export) == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_confidence_that_is_not_a_finite_number_is_named(aworld, value) -> None:
    *_, restore = tools(aworld)
    with pytest.raises(ValidationError) as refused:
        restore([memory(A, "One.", confidence=value)], check=True)
    assert refused.value.field == "confidence" and "not a finite number" in refused.value.message


def test_memory_history_stops_at_a_repeat(world) -> None:
    memory_tool, *_ = tools(world)
    one = memory_tool(StoreMemoryRequest("Version one.", "fact", 1.0))
    two = memory_tool(StoreMemoryRequest("Version two.", "fact", 1.0))
    store = world.store
    store.memories[one.id] = replace(store.memories[one.id], supersedes=two.id, superseded_by=two.id)
    store.memories[two.id] = replace(store.memories[two.id], supersedes=one.id, superseded_by=one.id)
    history = MemoryHistory(store, world.policies, identity=lambda: RequestContext(Principal("local")),
                            now=lambda: NOW)
    assert [h.id for h in history(one.id)] == [two.id, one.id]
    store.memories[one.id] = replace(store.memories[one.id], supersedes=one.id, superseded_by=one.id)
    assert [h.id for h in history(one.id)] == [one.id]


def test_an_export_holds_only_links_an_import_takes(world, aworld) -> None:
    from domain.memories.usecases import DeleteMemory

    memory_tool, *_, export, _ = tools(world)
    tea = memory_tool(StoreMemoryRequest("Ana likes tea.", "preference", 0.9, valid_from="2024-01-01T00:00:00Z"))
    coffee = memory_tool(StoreMemoryRequest("Ana likes coffee.", "preference", 0.9, supersedes=tea.id,
                                            valid_from="2024-06-01T00:00:00Z"))
    one = memory_tool(StoreMemoryRequest("One.", "fact", 1.0))
    two = memory_tool(StoreMemoryRequest("Two.", "fact", 1.0))
    store = world.store  # two memories replacing each other, as an unchecked import could leave them
    store.memories[one.id] = replace(store.memories[one.id], supersedes=two.id, superseded_by=two.id,
                                     valid_to="2030-01-01T00:00:00Z")
    store.memories[two.id] = replace(store.memories[two.id], supersedes=one.id, superseded_by=one.id,
                                     valid_to="2030-01-01T00:00:00Z")
    whole = {r["id"]: r for r in everything(export, limit=1)}  # a page each: partners read from the store
    assert (whole[tea.id]["superseded_by"], whole[coffee.id]["supersedes"]) == (coffee.id, tea.id)
    assert all(n not in whole[m.id] for m in (one, two) for n in ("supersedes", "superseded_by"))
    DeleteMemory(store, identity=lambda: RequestContext(Principal("local")))(coffee.id)
    records = everything(export)
    old = next(r for r in records if r["id"] == tea.id)
    assert "superseded_by" not in old and old["valid_to"] == "2024-06-01T00:00:00Z"  # it ended then, still
    *_, restore_b = tools(aworld)
    assert restore_b(records)["added"] == 3
