"""An edit audits what it changed, not what it was given: a field given as stored is no change, and an edit
that changes nothing writes and audits nothing (issue 42: the page's form saved as shown audited
``edit changed=['type']``)."""

from __future__ import annotations

from domain.access.principal import Principal, RequestContext
from domain.access.privacy import Privacy
from domain.memories.edit import EditMemory, MemoryChange
from domain.memories.usecases import StoreMemory, StoreMemoryRequest

LOCAL = RequestContext(Principal("local", clearance="sensitive"))


def edit(world) -> EditMemory:
    return EditMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: LOCAL)


def stored(world, privacy: Privacy = Privacy()):
    return StoreMemory(world.embedder, world.store, world.split, world.tokenizer, identity=lambda: LOCAL)(
        StoreMemoryRequest("The ferry leaves at nine", "fact", 0.9, privacy=privacy))


def test_an_edit_giving_every_field_as_stored_writes_and_audits_nothing(world) -> None:
    memory = stored(world, Privacy("sensitive", "custom", "custom", visible_to=["carol"], retention_days=400))
    before = world.store.recent(100)
    same = edit(world)(memory.id, MemoryChange(content="The ferry leaves at nine", type="fact", confidence=0.9,
                                               privacy={"sensitivity": "sensitive", "visibility_scope": "custom",
                                                        "retention_policy": "custom"}))
    assert same == memory == world.store.get_memories([memory.id])[memory.id]
    assert world.store.recent(100) == before  # no "edit" entry


def test_only_the_fields_that_differ_are_named_changed(world) -> None:
    memory = stored(world)
    edit(world)(memory.id, MemoryChange(content="The ferry leaves at nine", type="fact", confidence=0.5,
                                        privacy={"sensitivity": "normal"}))
    entry = world.store.recent(1)[0]
    assert (entry.action, entry.detail["changed"]) == ("edit", ["confidence"])
    edit(world)(memory.id, MemoryChange(type="decision", privacy={"visibility_scope": "team"}))
    assert world.store.recent(1)[0].detail["changed"] == ["privacy", "type"]


def test_edit_answers_which_fields_changed(world) -> None:
    memory = stored(world)
    assert edit(world).edit(memory.id, MemoryChange(privacy={"sensitivity": "normal"})) == (memory, [])
    edited, changed = edit(world).edit(memory.id, MemoryChange(content="The ferry leaves at ten", type="fact"))
    assert (edited.content, changed) == ("The ferry leaves at ten", ["content"])
