"""``memtrove export PATH`` and ``memtrove import PATH``: memtrove's export format (JSON Lines, described
in domain/transfer/records.py) written from the server's pages, and read back in batches.

Both stream: an export writes each page as it comes (to a temporary file renamed at the end, so a
failed export leaves no half file); an import reads its file twice, line by line, first only to check
every record (a bad line refused with the file, the line and the field, and nothing written), then to
write them. Each record is written whole or not at all; an import stopped part-way (a kill, the model
failing) is completed by running it again (what is stored already adds nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from domain.errors import ValidationError
from domain.transfer.records import FORMAT, HEADER, VERSION
from entrypoints.console.connection import call
from entrypoints.console.progress import Progress

PAGE = 200  # records a store_export call returns
BATCH_RECORDS = 200  # records a store_import call takes at most
BATCH_BYTES = 4_000_000  # and at most this much JSON


async def pages(client: Any) -> AsyncIterator[list[dict[str, Any]]]:
    cursor = None
    while True:
        page = await call(client, "store_export", cursor=cursor, limit=PAGE)
        yield page["records"]
        cursor = page.get("next_cursor")
        if not cursor:
            return


async def export(client: Any, path: str, progress: Progress, markdown: bool = False) -> tuple[dict[str, Any], str]:
    if markdown:
        return await export_markdown(client, path)
    started, count, kinds = time.perf_counter(), 0, {}  # type: ignore[var-annotated]
    target = Path(path).expanduser().resolve()
    if target.is_dir():
        raise ValidationError("PATH", f"{path} is a folder: name the file to write")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(json.dumps(HEADER) + "\n")
            async for page in pages(client):
                for record in page:
                    out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                    kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
                count += len(page)
                progress.say(f"{count} records written")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    summary = {"path": str(target), "records": count, **kinds, "bytes": target.stat().st_size,
               "seconds": round(time.perf_counter() - started, 2)}
    return summary, (f"exported {count} records ({', '.join(f'{n} {k}s' for k, n in kinds.items()) or 'nothing'}) "
                     f"to {target}: {summary['bytes']:,} bytes in {summary['seconds']} s")


async def export_markdown(client: Any, path: str) -> tuple[dict[str, Any], str]:
    """One readable file per memory, conversation and artifact under the folder ``path``: front matter
    (the record's fields, JSON values) and the text. For reading and for other tools; ``import`` reads
    the JSON Lines format."""
    from entrypoints.console.markdown import MarkdownFolder

    started = time.perf_counter()
    folder = MarkdownFolder(Path(path).expanduser().resolve())
    async for page in pages(client):
        for record in page:
            folder.add(record)
    folder.close()
    summary = {"path": str(folder.root), "files": folder.files, "seconds": round(time.perf_counter() - started, 2)}
    return summary, f"exported {folder.files} Markdown files to {folder.root} in {summary['seconds']} s"


def batches(path: Path) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(line of the first record, records) from an export file, its header checked."""
    name = str(path)
    with open(path, encoding="utf-8") as lines:
        batch: list[dict[str, Any]] = []
        first, size = 2, 0
        for number, line in enumerate(lines, start=1):
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise ValidationError("PATH", f"{name}:{number}: not a JSON object ({exc.msg})") from None
            if number == 1:
                if not isinstance(value, dict) or value.get(FORMAT) != VERSION:
                    raise ValidationError("PATH", f"{name}:1: not a memtrove export (the first line must be "
                                                  f"{json.dumps(HEADER)})")
                continue
            if not batch:
                first = number
            batch.append(value)
            size += len(line)
            if len(batch) >= BATCH_RECORDS or size >= BATCH_BYTES:
                yield first, batch
                batch, size = [], 0
        if batch:
            yield first, batch


def foreign_batches(fmt: str, path: Path, report: Any) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(number of the first record, records) converted from another tool's file (importers.py)."""
    from entrypoints.console.importers import read_foreign

    batch: list[dict[str, Any]] = []
    number = 0
    for number, record in enumerate(read_foreign(fmt, path, report), start=1):
        batch.append(record)
        if len(batch) >= BATCH_RECORDS:
            yield number - len(batch) + 1, batch
            batch = []
    if batch:
        yield number - len(batch) + 1, batch


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


def repeated(seen: dict[tuple[Any, ...], tuple[str, int]], records: list[dict[str, Any]], first: int,
             where: str) -> None:
    """Refuse a record naming what an earlier one of the same file names, with other content (the same
    record twice is fine: the second adds nothing)."""
    for n, record in enumerate(records):
        key = identity_of(record) if isinstance(record, dict) else ("?", first + n)
        digest = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()
        earlier = seen.setdefault(key, (digest, first + n))
        if earlier[0] != digest:
            raise ValidationError("record", f"{where} {first + n}: names the same {key[0]} as {where} {earlier[1]} "
                                            "with other content: nothing was imported")


async def restore(client: Any, path: str, progress: Progress, fmt: str | None = None) -> tuple[dict[str, Any], str]:
    """Import an export file, or (``fmt``) another tool's file converted record by record."""
    from entrypoints.console.importers import ImportFormatError, Report

    started = time.perf_counter()
    source = Path(path).expanduser()
    if not (source.is_dir() if fmt == "markdown" else source.is_file()):
        raise ValidationError("PATH", f"no such {'folder' if fmt == 'markdown' else 'file'}: {path}")
    report = Report()
    read = (lambda: batches(source)) if fmt is None else (lambda: foreign_batches(fmt, source, report))
    where = "line" if fmt is None else "record"
    added = unchanged = expired = 0
    try:
        seen: dict[tuple[Any, ...], tuple[str, int]] = {}
        for first, records in read():  # first only checked: a bad record leaves the store as it was
            repeated(seen, records, first, where)
            await call(client, "store_import", records=records, first_line=first, check=True)
        seen.clear()
        skipped, report.skipped = list(report.skipped), []
        for first, records in read():
            got = await call(client, "store_import", records=records, first_line=first)
            added, unchanged, expired = added + got["added"], unchanged + got["unchanged"], expired + got["expired"]
            progress.say(f"{added + unchanged + expired} records read")
    except ValidationError as exc:
        message = exc.message.replace("line ", f"{where} ", 1)
        if added:  # the store changed since the check (another writer): say what is in, and how to finish
            message = message.replace("nothing was imported", f"{added} records were imported before it; run the "
                                                              "import again once this is mended to complete it")
        raise ValidationError(exc.field, message if exc.field == "PATH" else f"{source}: {message}") from None
    except ImportFormatError as exc:
        raise ValidationError(exc.field, str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ValidationError("PATH", f"{source}: not UTF-8 text (byte {exc.start})") from None
    summary = {"path": str(source), "format": fmt or "memtrove", "added": added, "unchanged": unchanged,
               "expired": expired,
               "skipped": [{"where": w, "why": why} for w, why in skipped],
               "seconds": round(time.perf_counter() - started, 2)}
    lines = [f"imported {source}: {added} added, {unchanged} already stored, {expired} expired (left out), "
             f"{len(skipped)} skipped, "
             f"in {summary['seconds']} s", *(f"  skipped {w}: {why}" for w, why in skipped)]
    return summary, "\n".join(lines)
