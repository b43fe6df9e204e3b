"""The id an import stores a memory under: never another's, and never telling whether another has it.

Memory ids are one namespace for every caller, and an import is the one write where the caller
names the id. Writing under another's id is refused by the store, and a refusal (or a copy under a
new id only when the id is taken) would tell the caller that someone holds that id (issue 41.3). So:

- an id the caller's own memory has is kept (the record is compared with it: stored as it is, it adds
  nothing; with other content, it is refused);
- the local owner (who holds the store's files anyway) keeps any id no one has, so a backup comes back
  with its ids, byte for byte;
- every other id is replaced by one derived from the caller and the id (``mem_`` + 128 bits of
  SHA-256): a token caller's import never keeps an id it did not already hold, whether or not another
  holds it, so nothing it can observe afterwards depends on another's memories. The derived id is the
  same on every import, so importing a file twice adds nothing, and the file's links follow it.
  The local owner's import of an id another holds takes the derived id too; it never touches theirs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from domain.access.principal import LOCAL_USER
from domain.errors import StorageError
from domain.ids import MEMORY_ID
from domain.ports import MetadataStore

TRIES = 8  # derived ids taken by another in a row before giving up (only a forged store gets past one)


def derived(owner: str, memory_id: str) -> str:
    return "mem_" + hashlib.sha256(f"import\x1f{owner}\x1f{memory_id}".encode()).hexdigest()[:32]


def import_ids(store: MetadataStore, owner: str, wanted: Iterable[object]) -> dict[str, str]:
    """The id each of ``wanted`` (a file's memory ids; others are left to the record checks) is stored
    under for ``owner``."""
    ids = {w for w in wanted if isinstance(w, str) and MEMORY_ID.match(w)}
    held = store.get_memories(sorted(ids))
    placed: dict[str, str] = {}
    for memory_id in ids:
        found = held.get(memory_id)
        if (found is not None and found.owner == owner) or (found is None and owner == LOCAL_USER):
            placed[memory_id] = memory_id
    todo = {memory_id: derived(owner, memory_id) for memory_id in ids - set(placed)}
    for _ in range(TRIES):
        if not todo:
            return placed
        taken = {c: m for c, m in store.get_memories(sorted(set(todo.values()))).items() if m.owner != owner}
        for memory_id, candidate in list(todo.items()):
            if candidate in taken:
                todo[memory_id] = derived(owner, candidate)
            else:
                placed[memory_id] = todo.pop(memory_id)
    raise StorageError("could not place the imported memories under ids of their own: try again")
