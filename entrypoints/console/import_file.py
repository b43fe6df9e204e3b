"""The file ``memtrove import`` reads, in batches for store_import, and what only the whole file shows:
a record naming what an earlier one names with other content, and the memories' supersession links
across batches (domain/transfer/links.py; each store_import call checks those within its batch and
against the store, told which of the file's other memories its records link to: ``linked``).

A line is read up to jsonlines.MAX_LINE bytes, never whole; a line that is not what the import takes
is refused naming the file, the line and, where it is a field's, the field (entrypoints/console/jsonlines.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from domain.errors import ValidationError
from domain.transfer.links import UNKNOWN, Link, problems
from domain.transfer.records import FORMAT, HEADER, VERSION
from entrypoints.console.jsonlines import MAX_LINE, JsonProblem, LineTooLong, checked, lines, loads

BATCH_RECORDS = 200  # records a store_import call takes at most
BATCH_BYTES = 4_000_000  # and at most this much JSON
LINKS = ("supersedes", "superseded_by")
Batches = Callable[[], Iterator[tuple[int, list[dict[str, Any]]]]]


def refused(number: int, problem: JsonProblem) -> ValidationError:
    return ValidationError(problem.field, f"line {number}: {problem.problem} (field {problem.field}): nothing "
                                          "was imported")


def batches(path: Path) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(line of the first record, records) from an export file, its header checked."""
    name = str(path)
    with open(path, "rb") as stream:
        batch: list[dict[str, Any]] = []
        first, size = 2, 0
        try:
            for number, raw in lines(stream, MAX_LINE):
                if number == 1:
                    header(name, raw)
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ValidationError("path", f"{name}:{number}: not UTF-8 text (byte {exc.start + 1} of the "
                                                  "line)") from None
                try:
                    value = loads(text)
                except JsonProblem as exc:
                    if exc.field == "record":
                        raise ValidationError("path", f"{name}:{number}: {exc.problem}") from None
                    raise refused(number, exc) from None
                if not batch:
                    first = number
                batch.append(value)
                size += len(raw)
                if len(batch) >= BATCH_RECORDS or size >= BATCH_BYTES:
                    yield first, batch
                    batch, size = [], 0
        except LineTooLong as exc:
            raise ValidationError("path", f"{name}:{exc.number}: the line is over {exc.limit:,} bytes, longer than "
                                          "any record: it was not read further") from None
        if batch:
            yield first, batch


def header(name: str, raw: bytes) -> None:
    """The first line of an export file checked: memtrove's export format, of the version this reads."""
    try:
        value = json.loads(raw.decode("utf-8").removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and value.get(FORMAT) == VERSION:
        return
    if isinstance(value, dict) and FORMAT in value:
        raise ValidationError("path", f"{name}:1: a memtrove export of version {value[FORMAT]!r}; this memtrove "
                                      f"reads version {VERSION}")
    raise ValidationError("path", f"{name}:1: not a memtrove export (its first line is {json.dumps(HEADER)}); "
                                  "another tool's file is read with --from reference, mcp-memory-service, markdown, "
                                  "claude or chatgpt")


def foreign_batches(fmt: str, path: Path, report: Any) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(number of the first record, records) converted from another tool's file (importers.py)."""
    from entrypoints.console.importers import read_foreign

    batch: list[dict[str, Any]] = []
    number = 0
    for number, record in enumerate(read_foreign(fmt, path, report), start=1):
        try:
            batch.append(checked(record))  # what a file's values became: the same checks as a line's
        except JsonProblem as exc:
            raise refused(number, exc) from None
        if len(batch) >= BATCH_RECORDS:
            yield number - len(batch) + 1, batch
            batch = []
    if batch:
        yield number - len(batch) + 1, batch


def split(first: int, records: list[dict[str, Any]], left_out: set[int]) -> list[tuple[int, list[dict[str, Any]]]]:
    """(number of the first record, records) of the runs of a batch between the records ``left_out``."""
    parts: list[tuple[int, list[dict[str, Any]]]] = []
    start = 0
    for n in [n - first for n in sorted(left_out) if first <= n < first + len(records)] + [len(records)]:
        if n > start:
            parts.append((first + start, records[start:n]))
        start = n + 1
    return parts


def identity_of(record: dict[str, Any]) -> tuple[Any, ...]:
    """What names a record in a store: a memory's id, a turn's place, an artifact's source (else its text)."""
    kind = record.get("kind")
    if kind == "memory":
        return kind, record.get("id")
    if kind == "turn":
        return kind, record.get("conversation_id"), record.get("turn_index")
    if kind == "document":
        return kind, record.get("project"), record.get("item_id"), record.get("version_num")
    if kind == "entity":
        return kind, record.get("name")
    if kind == "relation":
        return kind, record.get("from"), record.get("to"), record.get("relation_type")
    source = record.get("source_id") or hashlib.sha256(str(record.get("content")).encode()).hexdigest()
    return kind, record.get("source_system"), source


def _memory(record: object) -> dict[str, Any] | None:
    return record if isinstance(record, dict) and record.get("kind") == "memory" \
        and isinstance(record.get("id"), str) else None


@dataclass
class FileScan:
    """What the whole file holds that a batch cannot see: each record's identity (a repeat with other
    content is refused) and its memories (ids, and the links of those that have any)."""
    where: str = "line"
    seen: dict[tuple[Any, ...], tuple[str, int]] = field(default_factory=dict)
    memories: set[str] = field(default_factory=set)
    links: dict[str, Link] = field(default_factory=dict)

    def add(self, records: list[dict[str, Any]], first: int) -> None:
        for n, record in enumerate(records):
            key = identity_of(record) if isinstance(record, dict) else ("?", first + n)
            digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()
            earlier = self.seen.setdefault(key, (digest, first + n))
            if earlier[0] != digest:
                raise ValidationError("record", f"{self.where} {first + n}: names the same {key[0]} as {self.where} "
                                                f"{earlier[1]} with other content: nothing was imported")
            memory = _memory(record)
            if memory is None:
                continue
            self.memories.add(memory["id"])
            named = {k: memory.get(k) for k in (*LINKS, "valid_from", "valid_to")}
            if any(isinstance(memory.get(k), str) for k in LINKS) and all(v is None or isinstance(v, str)
                                                                         for v in named.values()):
                self.links[memory["id"]] = Link(memory["id"], line=first + n, **named)

    def linked(self, records: Iterable[object]) -> list[str] | None:
        """The file's other memories these records' links name (store_import's ``linked``)."""
        here = [m for m in map(_memory, records) if m is not None]
        named = {m.get(k) for m in here for k in LINKS} & self.memories
        return sorted(named - {m["id"] for m in here}) or None

    def check_links(self) -> None:
        """The file's links as a whole (after every batch passed its own check: the values are sound)."""
        def resolve(memory_id: str) -> Link | str:
            found = self.links.get(memory_id)
            return found if found is not None else Link(memory_id) if memory_id in self.memories else UNKNOWN

        for link, name, message in problems(sorted(self.links.values(), key=lambda x: x.line), resolve):
            raise ValidationError(name, f"{self.where} {link.line}: {message} (field {name}): nothing was imported")
