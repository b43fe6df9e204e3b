"""Editing a memory (EditMemory): in place, only by its owner, privacy kept unless given, nothing written
on a refusal."""

from __future__ import annotations

import pytest

from domain.access.principal import Principal, RequestContext
from domain.access.privacy import Privacy
from domain.errors import NotFoundError, ValidationError
from domain.memories.edit import EditMemory, MemoryChange
from domain.memories.usecases import StoreMemory, StoreMemoryRequest

LOCAL = RequestContext(Principal("local", clearance="sensitive"))
BOB = RequestContext(Principal("bob", ("eng",), "acme"))


def edit(world, who=LOCAL) -> EditMemory:
    return EditMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: who)


def stored(world, privacy: Privacy = Privacy(), who=LOCAL):
    return StoreMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: who)(
        StoreMemoryRequest("The ferry leaves at nine", "fact", 0.9, privacy=privacy))


def test_an_edit_keeps_id_time_and_privacy_and_replaces_words_and_vectors(world) -> None:
    memory = stored(world, Privacy("sensitive", "custom", "custom", visible_to=["carol", "team:ops"],
                                   retention_days=400))
    edited = edit(world)(memory.id, MemoryChange(content="The ferry leaves at ten", confidence=0.5))
    assert (edited.id, edited.ts, edited.type) == (memory.id, memory.ts, "fact")
    assert (edited.content, edited.confidence, edited.token_count) == ("The ferry leaves at ten", 0.5, 5)
    assert (edited.acl, edited.expires_epoch, edited.sensitivity) == (memory.acl, memory.expires_epoch, "sensitive")
    assert world.store.get_memories([memory.id])[memory.id] == edited
    assert world.store.lexical_search("memory", ["nine"], 5) == []
    assert [h.record_id for h in world.store.lexical_search("memory", ["ten"], 5)] == [memory.id]
    entry = world.store.recent(1)[0]
    assert (entry.action, entry.detail["changed"]) == ("edit", ["confidence", "content"])


def test_privacy_fields_given_replace_only_those(world) -> None:
    memory = stored(world, Privacy(visibility_scope="custom", visible_to=["carol"]))
    edited = edit(world)(memory.id, MemoryChange(privacy={"sensitivity": "sensitive"}))
    assert (edited.sensitivity, edited.visibility_scope, edited.acl) == ("sensitive", "custom", memory.acl)
    widened = edit(world)(memory.id, MemoryChange(privacy={"visibility_scope": "me"}))
    assert widened.acl == ("u:local",) and widened.content == memory.content


@pytest.mark.parametrize(("change", "field"), [
    (MemoryChange(), "content"),
    (MemoryChange(content=""), "content"),
    (MemoryChange(type="gossip"), "type"),
    (MemoryChange(confidence=1.5), "confidence"),
    (MemoryChange(privacy={"sensitivity": "highly_sensitive"}), "sensitivity"),  # nobody could read it back
    (MemoryChange(privacy={"retention_days": 30}), "retention_days"),  # needs retention_policy=custom
])
def test_bad_input_is_refused_by_field_and_changes_nothing(world, change: MemoryChange, field: str) -> None:
    memory = stored(world)
    before = world.store.recent(100)
    with pytest.raises(ValidationError) as refused:
        edit(world)(memory.id, change)
    assert refused.value.field == field
    assert world.store.get_memories([memory.id])[memory.id] == memory and world.store.recent(100) == before


def test_only_the_owner_edits_and_an_unseen_or_missing_memory_is_not_found(world) -> None:
    shared = stored(world, Privacy(visibility_scope="custom", visible_to=["bob"]))
    private = stored(world)
    with pytest.raises(ValidationError, match="local's: only its owner may edit it"):
        edit(world, BOB)(shared.id, MemoryChange(content="hijacked"))
    with pytest.raises(NotFoundError):
        edit(world, BOB)(private.id, MemoryChange(content="hijacked"))
    with pytest.raises(NotFoundError):
        edit(world)("mem_" + "0" * 32, MemoryChange(content="x"))
    assert {m.content for m in world.store.get_memories([shared.id, private.id]).values()} == {
        "The ferry leaves at nine"}
    assert [e.action for e in world.store.recent(2)] == ["denied", "denied"]
