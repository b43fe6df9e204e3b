"""``memtrove export PATH`` and ``memtrove import PATH``: memtrove's export format (JSON Lines, described
in domain/transfer/records.py) written from the server's pages, and read back in batches.

Both stream: an export writes each page as it comes (to a temporary file renamed at the end, so a
failed export leaves no half file); an import reads its file three times, line by line (entrypoints/console/import_file.py): first
alone (its values, a record repeated with other content, the memories' links), then to have the store
check every record (a bad line refused with the file, the line and the field, and nothing written),
then to write them. Each record is written whole or not at all; an import stopped part-way (a kill, the model
failing) is completed by running it again (what is stored already adds nothing).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from domain.errors import ValidationError
from domain.transfer.records import HEADER
from entrypoints.console.connection import CommandFailed, call
from entrypoints.console.import_detect import hint
from entrypoints.console.import_file import FileScan, batches, foreign_batches, split
from entrypoints.console.progress import Progress

PAGE = 200  # records a store_export call returns


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
        raise ValidationError("path", f"{path} is a folder: name the file to write")
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
    return summary, (f"exported {count} records ({', '.join(counted(n, k) for k, n in kinds.items()) or 'nothing'}) "
                     f"to {target}: {summary['bytes']:,} bytes in {summary['seconds']} s")


def counted(count: int, kind: str) -> str:
    """``1 memory``, ``7 memories``, ``2 entities``, ``3 turns``: a record kind counted in English."""
    if count == 1:
        return f"1 {kind}"
    return f"{count} {kind[:-1]}ies" if kind.endswith("y") and kind[-2:-1] not in "aeiou" else f"{count} {kind}s"


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


async def restore(client: Any, path: str, progress: Progress, fmt: str | None = None) -> tuple[dict[str, Any], str]:
    """Import an export file, or (``fmt``) another tool's file converted record by record."""
    from entrypoints.console.importers import ImportFormatError, Report

    started = time.perf_counter()
    source = Path(path).expanduser()
    if not source.exists():
        raise ValidationError("path", f"no such {'folder' if fmt == 'markdown' else 'file'}: {path}")
    if said := hint(path, fmt):  # another format's file: say the command that imports it
        raise ValidationError("path", said)
    if source.is_dir() != (fmt == "markdown"):
        raise ValidationError("path", f"{path} is a file: --from markdown reads a folder of notes (basic-memory, "
                                      "Obsidian)" if fmt == "markdown" else f"{path} is a folder: name the file to "
                                      "import (or, for a folder of Markdown notes, use --from markdown)")
    report = Report()
    read = (lambda: batches(source)) if fmt is None else (lambda: foreign_batches(fmt, source, report))
    where = "line" if fmt is None else "record"
    added = unchanged = expired = 0
    try:
        scan = FileScan(where)
        for first, records in read():  # the file alone: its values, repeats, the memories and their links
            scan.add(records, first)
        skipped, report.skipped, kept_out = list(report.skipped), [], set()
        for first, records in read():  # each batch checked by the store: a bad record leaves it as it was
            await check(client, split(first, records, kept_out), scan, kept_out, skipped)
        scan.check_links()  # the links across batches, which no call sees whole
        report.skipped = []
        for first, records in (part for batch in read() for part in split(*batch, kept_out)):
            got = await call(client, "store_import", records=records, first_line=first, linked=scan.linked(records))
            added, unchanged, expired = added + got["added"], unchanged + got["unchanged"], expired + got["expired"]
            progress.say(f"{added + unchanged + expired} records read")
    except ValidationError as exc:
        message = exc.message.replace("line ", f"{where} ", 1)
        if added:  # the store changed since the check (another writer): say what is in, and how to finish
            message = message.replace("nothing was imported", f"{added} records were imported before it; run the "
                                                              "import again once this is mended to complete it")
        raise ValidationError(exc.field, message if exc.field == "path" else f"{source}: {message}") from None
    except CommandFailed as exc:  # the server stopped answering (killed, gone): what is in stays in
        done = f"{added} records were imported before it" if added else "what was imported before it is kept"
        raise CommandFailed(f"{source}: {exc.message}; {done}: run the import again to complete it (what is "
                            "stored already adds nothing)") from None
    except ImportFormatError as exc:
        raise ValidationError(exc.field, str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ValidationError("path", f"{source}: not UTF-8 text (byte {exc.start})") from None
    summary = {"path": str(source), "format": fmt or "memtrove", "added": added, "unchanged": unchanged,
               "expired": expired,
               "skipped": [{"where": w, "why": why} for w, why in skipped],
               "seconds": round(time.perf_counter() - started, 2)}
    lines = [f"imported {source}: {added} added, {unchanged} already stored, {expired} expired (left out), "
             f"{len(skipped)} skipped, "
             f"in {summary['seconds']} s", *(f"  skipped {w}: {why}" for w, why in skipped)]
    return summary, "\n".join(lines)


TITLE_STORED = re.compile(r"\bline (\d+): turn 0 of your conversation ")  # domain/transfer/restore.py's clash


async def check(client: Any, parts: list[tuple[int, list[dict[str, Any]]]], scan: FileScan, kept_out: set[int],
                skipped: list[tuple[str, str]]) -> None:
    """Have the store check each part (nothing written). A conversation's title turn refused as stored with
    another text (the conversation was renamed since it was imported) is left out, the stored title kept
    and said, and the rest checked again: a rename does not stop the import of a newer export."""
    from entrypoints.console.importers_chat import is_title

    while parts:
        first, records = parts.pop(0)
        try:
            await call(client, "store_import", records=records, first_line=first, check=True,
                       linked=scan.linked(records))
        except ValidationError as exc:
            found = TITLE_STORED.search(exc.message) if exc.field == "turn_index" else None
            number = int(found.group(1)) if found else -1
            if not first <= number < first + len(records) or not is_title(records[number - first]):
                raise
            kept_out.add(number)
            skipped.append((f"record {number}", f"the title of {records[number - first]['conversation_id']} "
                                                "differs from the one stored (renamed since it was imported): "
                                                "the stored title is kept"))
            parts[:0] = split(first, records, kept_out)
