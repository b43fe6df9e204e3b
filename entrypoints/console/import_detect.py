"""What a path handed to ``memtrove import`` looks like, from its first 64 KiB: memtrove's export or one
of the formats ``--from`` reads. Used to say which command imports it, never to import it as another
format than asked: an import writes, so the format is the user's to name (README, "Export and import").

A format is named only when the file bears its marks and no other's (else None: nothing is said and the
reader's own error stands):
- memtrove: a first line ``{"memtrove_export": ...}``;
- reference: a first line that is an entity (``type``, ``name``, ``entityType``) or a relation (``type``,
  ``from``, ``to``, ``relationType``), as the MCP reference memory server writes each line;
- mcp-memory-service: an SQLite database with a table memories of a content_hash column;
- claude, chatgpt: a JSON array whose conversations have ``chat_messages`` (Claude) or a ``mapping`` of
  message nodes (ChatGPT), keys outside any string;
- markdown: a folder holding a .md file.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
from contextlib import closing
from pathlib import Path

HEAD = 65_536
SQLITE = b"SQLite format 3\x00"
KEY = r'(?<![\\\w])"{}"\s*:'  # a key: a quote no backslash escapes (inside a string it would be \")
MARKS = {"claude": re.compile(KEY.format("chat_messages") + r"\s*\["),
         "chatgpt": re.compile(KEY.format("mapping") + r"\s*\{")}
NAMES = {
    "memtrove": "a memtrove export",
    "reference": "the MCP reference memory server's memory.jsonl",
    "mcp-memory-service": "an mcp-memory-service database",
    "markdown": "a folder of Markdown notes",
    "claude": "a Claude export (conversations.json)",
    "chatgpt": "a ChatGPT export (conversations.json)",
}


def looks_like(path: Path) -> str | None:
    """"memtrove", the ``--from`` format ``path`` is in, or None when it bears no format's marks alone."""
    try:
        if path.is_dir():
            return "markdown" if _has_notes(path) else None
        with open(path, "rb") as stream:
            head = stream.read(HEAD)
        if head.startswith(SQLITE):
            return "mcp-memory-service" if _service(path) else None
    except OSError:
        return None
    text = head.decode("utf-8", "ignore").removeprefix("\ufeff").lstrip(" \t\r\n")
    if text.startswith("{"):
        return _first_line(text.split("\n", 1)[0])
    if text.startswith("["):
        found = [name for name, mark in MARKS.items() if mark.search(text)]
        return found[0] if len(found) == 1 else None
    return None


def hint(path: str, wanted: str | None) -> str | None:
    """What to run instead when ``path`` looks like another format than ``wanted`` (None: memtrove's)."""
    seen = looks_like(Path(path).expanduser())
    if seen is None or seen == (wanted or "memtrove"):
        return None
    run = f"memtrove import {'' if seen == 'memtrove' else f'--from {seen} '}{shlex.quote(path)}"
    return f"{path} looks like {NAMES[seen]}, not {NAMES[wanted or 'memtrove']}: run {run}"


def _first_line(line: str) -> str | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if "memtrove_export" in value:
        return "memtrove"
    keys = {"entity": ("name", "entityType"), "relation": ("from", "to", "relationType")}.get(value.get("type"), ())
    return "reference" if keys and all(isinstance(value.get(k), str) for k in keys) else None


def _service(path: Path) -> bool:
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return "content_hash" in {row[1] for row in db.execute("PRAGMA table_info(memories)")}
    except sqlite3.Error:
        return False


def _has_notes(folder: Path, limit: int = 10_000) -> bool:
    """Whether a .md file is among the first ``limit`` entries under ``folder`` (hidden ones left out)."""
    seen = 0
    for entry in folder.rglob("*"):
        seen += 1
        if seen > limit:
            return False
        if entry.suffix.lower() == ".md" and not any(p.startswith(".") for p in entry.relative_to(folder).parts):
            return True
    return False
