"""The supersession links of an import's memories, checked before anything is written (issue 41.5).

A memory that replaced another says ``supersedes``; the one it replaced says ``superseded_by`` and
``valid_to`` (when it ended), as every store writes them. An import writes each record's links as
they are, so a file could make a memory supersede itself, two memories supersede each other (a
history that never ends), or hide a memory from search for good (``superseded_by`` naming nothing).
So an import's links must be whole: a memory's own (no link to itself, ``valid_to`` not before
``valid_from``, ``superseded_by`` with ``valid_to``), each pair naming each other, no cycle, and a
``superseded_by`` naming a memory of the import or one the caller stored. A ``supersedes`` naming
nothing is kept: the memory it replaced may have been deleted or left out, and it hides nothing.

``problems`` is one check for two callers: the store_import call (its records, the memories the
caller stored, and those the same import sends in other calls, which it cannot see: ``PENDING``), and
the command line over a whole file (its records; what is not in the file: ``UNKNOWN``, checked by
the calls against the store).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from domain.validation import epoch

PENDING = "pending"  # in another call of the same import: checked when it comes
UNKNOWN = "unknown"  # not in what is checked here: checked elsewhere (the file's import calls)
MAX_WALK = 10_000  # versions a cycle check follows at most


@dataclass(frozen=True, slots=True)
class Link:
    """A memory's place in its history, where the import has it (``line``: its line, 0 if stored)."""
    id: str
    supersedes: str | None = None
    superseded_by: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    line: int = 0


Resolve = Callable[[str], "Link | str | None"]  # a Link, PENDING, UNKNOWN, or None: no such memory


def own_problem(link: Link) -> tuple[str, str] | None:
    """What is wrong with one memory's links by themselves: (field, message), or None."""
    for name in ("supersedes", "superseded_by"):
        if getattr(link, name) == link.id:
            return name, f"{name} names the memory itself ({link.id}): a memory cannot replace itself"
    if link.supersedes is not None and link.supersedes == link.superseded_by:
        return "superseded_by", (f"supersedes and superseded_by both name {link.supersedes}: two memories "
                                 "cannot replace each other")
    if link.superseded_by is not None and link.valid_to is None:
        return "valid_to", (f"a memory superseded_by another ({link.superseded_by}) ended when it was replaced: "
                            "valid_to is missing")
    if link.valid_from is not None and link.valid_to is not None and \
            epoch(link.valid_to, "valid_to") < epoch(link.valid_from, "valid_from"):
        return "valid_to", f"valid_to {link.valid_to} is before valid_from {link.valid_from}"
    return None


def problems(links: list[Link], resolve: Resolve) -> Iterator[tuple[Link, str, str]]:
    """Each (memory, field, message) that breaks its history, in the order of ``links``."""
    for link in links:
        own = own_problem(link)
        if own is not None:
            yield link, *own
            continue
        for name, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes")):
            target = getattr(link, name)
            if target is None:
                continue
            other = resolve(target)
            if other is None and name == "superseded_by":
                yield link, name, (f"superseded_by names {target}, which is neither a memory of this import nor "
                                   "one you stored: it would hide this memory from search for good")
            elif isinstance(other, Link) and getattr(other, back) != link.id:
                said = getattr(other, back)
                yield link, name, (f"{name} names {target}, whose {back} is {said or 'not set'}, not "
                                   f"{link.id}: the two must name each other")
        cycle = _cycle(link, resolve)
        if cycle:
            yield link, "supersedes", f"supersedes makes a cycle: {' -> '.join(cycle)}"


def _cycle(link: Link, resolve: Resolve) -> list[str]:
    """The ids of a cycle the ``supersedes`` walk from ``link`` returns to it by, else []."""
    walked, at = [link.id], link
    while at.supersedes is not None and len(walked) < MAX_WALK:
        found = resolve(at.supersedes)
        if not isinstance(found, Link):
            return []
        if found.id in walked:
            return [*walked, found.id] if found.id == link.id else []  # a cycle elsewhere: its own memories'
        walked.append(found.id)
        at = found
    return []
