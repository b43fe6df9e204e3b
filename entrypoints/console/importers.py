"""Other memory tools' files as records of memtrove's export format (domain/transfer/records.py):
read_foreign yields them in the order to import, puts what it leaves out in the Report (where, why), and
raises ImportFormatError naming the file, the place and the field for a file not of its format.

Each format is read as its tool writes it, taken from the tool's source:
- reference: @modelcontextprotocol/server-memory's memory.jsonl (memory.json before 2025.8), into the
  knowledge graph, in importers_reference.py.
- mcp-memory-service: doobidoo/mcp-memory-service's SQLite-vec database per
  src/mcp_memory_service/storage/sqlite_vec.py @2e193783 (table memories, deleted_at soft deletes,
  superseded_by, update_memory_versioned), storage/migrations/011_memory_evolution_p1.sql, models/memory.py.
- markdown: basic-memory and Obsidian notes per basicmachines-co/basic-memory @4d1dfdb7 src/basic_memory/
  markdown/entity_parser.py, plugins.py, utils.parse_tags, ignore_utils.py; help.obsidian.md Tags, Properties.
- claude, chatgpt: the Claude.ai and ChatGPT data exports, in importers_claude.py and importers_chat.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

FORMATS = ("reference", "mcp-memory-service", "markdown", "claude", "chatgpt")
PRIVACY = {"sensitivity": "normal", "visibility_scope": "me", "retention_policy": "forever"}
CONFIDENCE = 1.0  # none of these tools records one: what they hold was stated, not guessed
MEMORY_CHARS, TURN_CHARS, ARTIFACT_BYTES = 10_000, 50_000, 10_000_000  # memtrove's limits
TITLE_CHARS, SOURCE_ID_CHARS, TAG_CHARS = 500, 500, 100
SERVICE, MARKDOWN = "mcp-memory-service", "markdown"  # source_system


@dataclass
class Report:
    """What an import took, and what it left out: (where, why)."""
    taken: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def skip(self, where: str, why: str) -> None:
        self.skipped.append((where, why))


class ImportFormatError(Exception):
    """A file that is not of its format: the message names the file, the place and the field."""
    def __init__(self, path: Path | str, where: str, field_name: str, problem: str) -> None:
        self.path, self.where, self.field = str(path), where, field_name
        super().__init__(f"{path}: {where}: {problem}")


def read_foreign(fmt: str, path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """The records of ``path`` (a file; a folder for markdown) as ``fmt``, in import order, as it reads."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    if not ((path := Path(path)).is_dir() if fmt == MARKDOWN else path.is_file()):
        raise ImportFormatError(path, "path", "path", f"the path names no {'folder' if fmt == MARKDOWN else 'file'}")
    if fmt == "claude":  # these use this module's helpers
        from entrypoints.console.importers_claude import read_claude as reader
    elif fmt == "chatgpt":
        from entrypoints.console.importers_chat import read_chatgpt as reader
    elif fmt == "reference":
        from entrypoints.console.importers_reference import read_reference as reader
    else:
        reader = {SERVICE: _service, MARKDOWN: _markdown}[fmt]
    for record in reader(path, report):
        report.taken += 1
        yield record


def when(value: object, naive_is_local: bool = False) -> str | None:
    """A time as memtrove writes it (UTC, ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``) from seconds since 1970 or an
    ISO-8601 text (one without an offset in UTC, or in local time); None if it is neither."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value, timezone.utc)
        else:
            text = value.strip() if isinstance(value, str) else ""
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
            if moment.tzinfo is None:
                moment = moment.astimezone() if naive_is_local else moment.replace(tzinfo=timezone.utc)
        utc = moment.astimezone(timezone.utc)
        return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds").replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return None


def visible(text: str) -> bool:
    """Whether memtrove takes it as non-empty: something besides whitespace, control and format characters."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf") for ch in text)


def digest(*parts: str) -> str:
    """32 hex characters of SHA-256 over the parts: stable ids, the same file giving the same ones."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def decode(path: Path, data: bytes) -> str:
    """UTF-8 text without its byte order mark; else ImportFormatError at the line of the bad byte."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ImportFormatError(path, f"line {line}", "content", f"content is not UTF-8 (byte {exc.start})") from None


def tag_list(tags: Iterable[str]) -> list[str]:
    """Tags memtrove can filter on (1-100 characters), "#" dropped, the first spelling of each (any case)."""
    kept: dict[str, str] = {}
    for tag in (t.strip().lstrip("#").strip() for t in tags):
        if tag and len(tag) <= TAG_CHARS and visible(tag):
            kept.setdefault(tag.casefold(), tag)
    return list(kept.values())


def unfit(text: str) -> str | None:
    """Why an artifact cannot hold the text, if it cannot."""
    return "empty" if not visible(text) else "over 10 MB of UTF-8, more than an artifact holds" \
        if len(text.encode("utf-8", "surrogatepass")) > ARTIFACT_BYTES else None


def artifact_record(source_system: str, source_id: str, title: str | None, ts: str, content: str,
                    labels: dict[str, Any], artifact_type: str = "note", source_url: str | None = None) -> dict[str, Any]:
    return {"kind": "artifact", "id": None, "artifact_type": artifact_type, "source_system": source_system,
            "source_id": source_id, "source_url": source_url, "title": title[:TITLE_CHARS] if title else None,
            "author": None, "participants": [], "ts": ts, "chunker": None, "chunked": True, "labels": labels,
            **PRIVACY, "content": content}


NEEDED = ("content_hash", "content", "tags", "memory_type", "metadata", "created_at")
OPTIONAL = ("created_at_iso", "deleted_at", "superseded_by")  # later columns; older databases lack them


def _service(path: Path, report: Report) -> Iterator[dict[str, Any]]:
    """sqlite_vec.db, opened read-only: each live row of table memories as a note artifact."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
        try:
            columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
        except sqlite3.DatabaseError as exc:
            raise ImportFormatError(path, "file", "memories",
                                    f"not an SQLite database with a table memories ({exc})") from None
        missing = [c for c in NEEDED if c not in columns]
        if missing:
            raise ImportFormatError(path, "table memories", "memories" if not columns else missing[0],
                                    "no table memories: not an mcp-memory-service SQLite-vec database"
                                    if not columns else f"table memories has no column {missing[0]}")
        wanted = ", ".join(c if c in columns else f"NULL AS {c}" for c in NEEDED + OPTIONAL)
        for rowid, *row in db.execute(f"SELECT rowid, {wanted} FROM memories ORDER BY rowid"):
            record = _row(path, report, f"row {rowid}", tuple(row))
            if record is not None:
                yield record


def _row(path: Path, report: Report, where: str, row: tuple[Any, ...]) -> dict[str, Any] | None:
    content_hash, content, tags, memory_type, metadata, created_at, created_iso, deleted_at, newer = row
    try:  # metadata as the service reads it: anything but a JSON object is {} (too deep or long a number too)
        meta = json.loads(metadata) if isinstance(metadata, str) else {}
    except (ValueError, RecursionError):
        meta = {}
    newer = newer or (meta.get("superseded_by") if isinstance(meta, dict) else None)
    if deleted_at is not None or newer:
        report.skip(where, f"superseded by {newer} (a newer version)" if deleted_at is None else
                    f"soft-deleted (deleted_at {when(deleted_at) or deleted_at})")
        return None
    for name, value in (("content_hash", content_hash), ("content", content), ("tags", tags or ""),
                        ("memory_type", memory_type or "")):
        if not isinstance(value, str):
            raise ImportFormatError(path, where, name, f"column {name} must be text (got {value!r})")
    name, value = ("created_at", created_at) if created_at is not None else ("created_at_iso", created_iso)
    ts = when(value)
    if ts is None:
        raise ImportFormatError(path, where, name, f"column {name} is not a time (got {value!r})")
    content = content.replace("\x00", "")
    if why := unfit(content):
        report.skip(where, why)
        return None
    kind = {"category": memory_type.strip()} if memory_type and memory_type.strip() else {}
    tags = tag_list(t for t in (tags or "").split(",") if t.strip() != "untagged")  # the service's "no tags"
    return artifact_record(SERVICE, content_hash[:SOURCE_ID_CHARS], None, ts, content,
                           {"tags": tags, "source": SERVICE, **kind})


FENCE = re.compile(r"-{3,}\s*")  # python-frontmatter's boundary, which basic-memory uses
PAIR = re.compile(r"([^\s#:-][^:]*?)\s*:(?:\s+(.*))?")
ITEM = re.compile(r"\s*-\s+(.*)")
TAG = re.compile(r"(?<!\S)#([\w/-]*[^\W\d][\w/-]*)")  # Obsidian: letters, digits, _ - /; not only digits
CODE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[^\n]*$|`[^`\n]*`", re.S | re.M)


def _markdown(folder: Path, report: Report) -> Iterator[dict[str, Any]]:
    """Each .md file as a note artifact: title, time and tags from its front matter, #tags from its body."""
    for file in _notes(folder, folder, report):
        where = file.relative_to(folder).as_posix()
        text = decode(file, file.read_bytes()).replace("\x00", "")
        why = "a path over 500 characters" if len(where) > SOURCE_ID_CHARS else unfit(text)
        if why:
            report.skip(where, why)
            continue
        meta, body = front_matter(text)
        title = meta.get("title")
        title = title.strip() if isinstance(title, str) and visible(title) and title != "None" else file.stem
        ts = when(meta.get("created"), True) or when(meta.get("date"), True) or when(file.stat().st_mtime)
        listed = meta.get("tags", meta.get("tag", []))
        listed = [t for x in (listed if isinstance(listed, list) else [listed]) for t in x.split(",")]  # parse_tags
        kind = meta.get("type")  # basic-memory's entity type
        yield artifact_record(MARKDOWN, where, title, ts, text, {
            "tags": tag_list([*listed, *TAG.findall(CODE.sub("", body))]),
            **({"category": kind.strip()} if isinstance(kind, str) and visible(kind) else {})})


def _notes(folder: Path, top: Path, report: Report) -> Iterator[Path]:
    """The .md files under ``folder`` by name, leaving out what basic-memory and Obsidian ignore."""
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        where = entry.relative_to(top).as_posix() + ("/" if entry.is_dir() else "")
        if entry.name.startswith("."):
            report.skip(where, "hidden (basic-memory and Obsidian ignore dot files and folders)")
        elif entry.is_dir() and entry.is_symlink():
            report.skip(where, "a link to a folder, not followed")
        elif entry.is_dir():
            yield from _notes(entry, top, report)
        elif entry.suffix.lower() == ".md" and entry.is_file():
            yield entry
        else:
            report.skip(where, "not a .md file")


def front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """The front matter's simple keys and the body. Read without YAML: ``key: value``, ``key: [a, b]``
    and ``key:`` followed by ``- item`` lines; other YAML is left out. No closing ``---``: no front matter."""
    lines = text.split("\n")
    end = next((n for n in range(1, len(lines)) if FENCE.fullmatch(lines[n])), None) \
        if FENCE.fullmatch(lines[0]) else None
    if end is None:
        return {}, text
    meta: dict[str, str | list[str]] = {}
    current: str | None = None
    for line in lines[1:end]:
        item, pair = ITEM.fullmatch(line), PAIR.fullmatch(line)
        listed = meta.get(current) if current is not None else None
        if item and isinstance(listed, list):
            listed.append(_scalar(item.group(1)))
        elif pair and not line[0].isspace():
            current, value = pair.group(1), (pair.group(2) or "").strip()
            meta[current] = [] if not value or value.startswith("#") else \
                [_scalar(v) for v in re.findall(r"\s*(\"[^\"]*\"|'[^']*'|[^,]+)", value[1:-1]) if v.strip()] \
                if value.startswith("[") and value.endswith("]") else _scalar(value)
        elif line.strip() and not line[0].isspace():
            current = None
    return meta, "\n".join(lines[end + 1:])


def _scalar(value: str) -> str:
    """A YAML scalar's text: quotes taken off, a trailing `` # comment`` cut from a plain one."""
    value = value.strip()
    if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value.split(" #", 1)[0].strip()
