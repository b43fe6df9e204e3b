"""Importers of other memory tools' files (entrypoints/console/importers.py, importers_reference.py), on
fixtures made in each tool's real format (tests/fixtures/imports): the exact records each yields, ids the
same on every read, what is skipped and why, a file not of its format refused with the file, the place and
the field, and every record of every format (the chat exports' too, whose own tests are in
test_importers_chat.py) taken whole by memtrove's own import (ImportRecords, on the in-memory fakes)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from domain.access.principal import Principal, RequestContext
from domain.artifacts.ingest import IngestArtifact
from domain.history.usecases import AppendTurn
from domain.memories.usecases import StoreMemory
from domain.model import ChunkSpec
from domain.documents.usecases import ItemWriter
from domain.transfer.usecases import ImportRecords
from entrypoints.console.importers import FORMATS, ImportFormatError, Report, read_foreign
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
PRIVACY = {"sensitivity": "normal", "visibility_scope": "me", "retention_policy": "forever"}
MTIME = 1735787045  # 2025-01-02T03:04:05Z, given to copied fixtures whose format has no times


def read(fmt: str, path: Path) -> tuple[list[dict[str, Any]], Report]:
    report = Report()
    records = list(read_foreign(fmt, path, report))
    assert report.taken == len(records)
    return records, report


def fact(key: str, content: str, ts: str = "2025-01-02T03:04:05Z") -> dict[str, Any]:
    return {"kind": "memory", "id": f"mem_{key}", "type": "fact", "confidence": 1.0, "ts": ts,
            "conversation_id": None, **PRIVACY, "content": content}


def note(source_system: str, source_id: str, title: str | None, ts: str, content: str,
         labels: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "artifact", "id": None, "artifact_type": "note", "source_system": source_system,
            "source_id": source_id, "source_url": None, "title": title, "author": None, "participants": [],
            "ts": ts, "chunker": None, "chunked": True, "labels": labels, **PRIVACY, "content": content}


def turn(conversation_id: str, index: int, role: str, ts: str, content: str) -> dict[str, Any]:
    return {"kind": "turn", "conversation_id": conversation_id, "turn_index": index, "role": role, "ts": ts,
            **PRIVACY, "content": content}


def refused(fmt: str, path: Path, where: str, field: str, file: Path | None = None) -> ImportFormatError:
    """Reading ``path`` fails naming the file (``file`` in a folder), the place and the field; the error."""
    with pytest.raises(ImportFormatError) as caught:
        list(read_foreign(fmt, path, Report()))
    error, file = caught.value, file or path
    assert (error.path, error.where, error.field) == (str(file), where, field)
    assert str(error).startswith(f"{file}: {where}: ") and field in str(error).removeprefix(f"{file}: {where}: ")
    return error


# ---- reference: @modelcontextprotocol/server-memory's memory.jsonl -------------------------------------

REFERENCE = [
    {"kind": "entity", "name": "Maya_Lindqvist", "entity_type": "person",
     "observations": ["Prefers dark roast coffee, no sugar", "Works remotely from Gothenburg",
                      "Uses Neovim with the LazyVim distribution"]},
    {"kind": "entity", "name": "Project_Heron", "entity_type": "project",
     "observations": ["Migrates the billing database to PostgreSQL 16", "Deadline moved to 2025-09-30 after the audit"]},
    {"kind": "entity", "name": "Nordvik_AB", "entity_type": "organization",
     "observations": ["Maya's employer since 2021", "Headquartered in Malmö"]},  # extra properties dropped
    {"kind": "relation", "from": "Maya_Lindqvist", "to": "Nordvik_AB", "relation_type": "works_at"},
    {"kind": "relation", "from": "Maya_Lindqvist", "to": "Project_Heron", "relation_type": "leads"},
    {"kind": "relation", "from": "Project_Heron", "to": "Legacy_Billing", "relation_type": "replaces"},  # dangling
]


def copied(tmp_path: Path, name: str, as_name: str | None = None) -> Path:
    target = tmp_path / (as_name or name)
    shutil.copy(FIXTURES / name, target)
    os.utime(target, (MTIME, MTIME))
    return target


def test_reference_entities_and_relations_become_the_graph(tmp_path) -> None:
    records, report = read("reference", copied(tmp_path, "memory.jsonl"))
    assert records == REFERENCE
    assert report.skipped == [("line 1", "the same observation as line 1"),
                              ("line 2", "an empty observation of Project_Heron")]


def test_reference_the_same_records_on_every_read_and_from_a_legacy_memory_json(tmp_path) -> None:
    jsonl = copied(tmp_path, "memory.jsonl")
    legacy = copied(tmp_path, "memory.jsonl", "memory.json")  # before 2025.8 the server wrote memory.json
    assert read("reference", jsonl)[0] == read("reference", jsonl)[0] == read("reference", legacy)[0]


def test_reference_odd_lines_skipped_and_an_entity_named_twice_merged(tmp_path) -> None:
    long = "x" * 10_001
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in (
        {"type": "entity", "name": "Log", "entityType": "file", "observations": [long, "rotated daily"]},
        {"type": "note", "text": "written by a fork"},
        {"type": "relation", "from": "Log", "to": "Log", "relationType": "mentions"},
        {"type": "relation", "from": "Log", "to": "Log", "relationType": "mentions"},
        {"type": "entity", "name": "Log", "entityType": "document", "observations": ["kept a year"]})) + "\n",
        encoding="utf-8")
    records, report = read("reference", path)
    assert records == [{"kind": "entity", "name": "Log", "entity_type": "file",
                        "observations": ["rotated daily", "kept a year"]},
                       {"kind": "relation", "from": "Log", "to": "Log", "relation_type": "mentions"}]
    assert report.skipped == [
        ("line 1", "an observation of Log over 10000 characters, more than memtrove keeps"),
        ("line 2", "type 'note' is neither entity nor relation (the server ignores the line)"),
        ("line 4", "the same relation as line 3"),
        ("line 5", "type 'document' of 'Log': line 1 gave it 'file' (its observations are kept)")]


@pytest.mark.parametrize("line, field", [
    ('{"type":"entity","name":"Half_Written","entityType":"pers', "line"),  # a save cut short
    ('{"type":"entity","name":"X","entityType":"thing","observations":"one"}', "observations"),
    ('{"type":"entity","name":"X","entityType":"thing","observations":["ok", null]}', "observations"),
    ('{"type":"entity","entityType":"thing","observations":[]}', "name"),
    ('{"type":"relation","from":"A","relationType":"knows"}', "to"),
    ('["entity","X"]', "type"),
])
def test_reference_a_malformed_line_is_refused_with_its_line_and_field(tmp_path, line, field) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text('{"type":"entity","name":"A","entityType":"person","observations":[]}\n' + line,
                    encoding="utf-8")
    refused("reference", path, "line 2", field)


# ---- mcp-memory-service: its SQLite-vec database --------------------------------------------------------

def maker() -> Any:
    spec = importlib.util.spec_from_file_location("make_mcp_memory_service", FIXTURES / "make_mcp_memory_service.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def service_note(content: str, ts: str, tags: list[str], category: str | None = None) -> dict[str, Any]:
    labels = {"tags": tags, "source": "mcp-memory-service", **({"category": category} if category else {})}
    return note("mcp-memory-service", maker().content_hash(content), None, ts, content, labels)


def test_service_live_rows_are_notes_with_their_tags_type_and_time(tmp_path) -> None:
    make = maker()
    db = make.build(tmp_path / "sqlite_vec.db")
    before = db.read_bytes()
    records, report = read("mcp-memory-service", db)
    assert records == [
        service_note("Prefer uv over pip for new Python projects; pin versions with uv.lock.",
                     "2025-01-02T03:04:05.250000Z", ["python", "tooling", "proj:heron"], "decision"),
        service_note("PostgreSQL 16 logical replication needs wal_level=logical on the primary.",
                     "2025-01-04T14:13:20Z", ["postgres", "topic:databases"], "learning"),
        service_note("Staging deploys run from the release/* branches only.", "2025-01-05T18:00:00.500000Z", [],
                     "observation"),  # "untagged" is the service's placeholder for no tags
        service_note(make.CUTOVER_NEW, "2025-02-08T07:33:20Z", ["proj:heron", "timeline"], "milestone"),
        service_note("Maya reviews every schema migration before it ships.", "2023-11-26T12:00:00Z", []),
        service_note(make.STANDUP_NEW, "2025-02-19T21:20:00Z", ["team"], "observation"),
    ]
    assert report.skipped == [
        ("row 4", "soft-deleted (deleted_at 2025-02-02T12:40:00Z)"),
        ("row 5", f"superseded by {make.content_hash(make.CUTOVER_NEW)} (a newer version)"),  # in its metadata
        ("row 8", f"superseded by {make.content_hash(make.STANDUP_NEW)} (a newer version)"),  # in its column
    ]
    assert read("mcp-memory-service", db)[0] == records  # the same on every read
    assert db.read_bytes() == before  # opened read-only


def test_service_a_database_from_before_soft_deletes_and_versions_reads_too(tmp_path) -> None:
    db = tmp_path / "sqlite_vec.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, content_hash TEXT UNIQUE NOT NULL,"
                     " content TEXT NOT NULL, tags TEXT, memory_type TEXT, metadata TEXT, created_at REAL,"
                     " updated_at REAL)")
        conn.execute("INSERT INTO memories (content_hash, content, tags, memory_type, metadata, created_at) "
                     "VALUES ('h1', 'Old note.', 'a,,b', NULL, 'not json', 1700000000)")
    conn.close()
    old = note("mcp-memory-service", "h1", None, "2023-11-14T22:13:20Z", "Old note.",
               {"tags": ["a", "b"], "source": "mcp-memory-service"})  # no memory type, metadata not JSON
    assert read("mcp-memory-service", db) == ([old], Report(1, []))


def test_service_a_file_not_of_the_format_is_refused(tmp_path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("this is not a database, " * 100)
    refused("mcp-memory-service", text, "file", "memories")
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    assert "no table memories" in str(refused("mcp-memory-service", empty, "table memories", "memories"))
    partial = tmp_path / "partial.db"
    sqlite3.connect(partial).execute("CREATE TABLE memories (content_hash, content, tags)").connection.close()
    refused("mcp-memory-service", partial, "table memories", "memory_type")


@pytest.mark.parametrize("column, value", [("created_at", "yesterday"), ("content", b"\x00\x01"),
                                           ("tags", b"proj:heron")])
def test_service_a_malformed_row_is_refused_with_its_row_and_column(tmp_path, column, value) -> None:
    db = maker().build(tmp_path / "sqlite_vec.db")
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE memories SET {column} = ? WHERE id = 3", (value,))
    conn.close()
    refused("mcp-memory-service", db, "row 3", column)


# ---- markdown: a basic-memory / Obsidian folder -----------------------------------------------------------

@pytest.fixture
def tokyo(monkeypatch):
    """Local time UTC+9: front matter times without an offset are local (as basic-memory reads them)."""
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def vault(tmp_path) -> Path:
    folder = shutil.copytree(FIXTURES / "vault", tmp_path / "vault")
    os.utime(folder / "inbox" / "2025-01-15 quick thought.md", (MTIME, MTIME))
    return folder


def test_markdown_each_note_is_an_artifact_with_its_front_matter_and_tags(vault, tokyo) -> None:
    records, report = read("markdown", vault)
    text = lambda name: (vault / name).read_text(encoding="utf-8")  # noqa: E731
    assert records == [
        note("markdown", "Coffee Brewing Methods.md", "Coffee Brewing Methods", "2025-03-04T08:15:00Z",
             text("Coffee Brewing Methods.md"), {"tags": ["coffee", "brewing", "filter", "temperature"],
                                                 "category": "note"}),
        note("markdown", "inbox/2025-01-15 quick thought.md", "2025-01-15 quick thought", "2025-01-02T03:04:05Z",
             text("inbox/2025-01-15 quick thought.md"), {"tags": ["idea", "perf"]}),  # no front matter: mtime
        note("markdown", "journal/2025-02-10.md", "2025-02-10", "2025-02-10T12:30:00Z",  # 21:30 local
             text("journal/2025-02-10.md"), {"tags": ["journal", "daily", "decision"]}),
        note("markdown", "people/Maya Lindqvist.md", "Maya Lindqvist", "2024-11-01T15:00:00Z",  # date: local day
             text("people/Maya Lindqvist.md"), {"tags": ["person", "work/colleague", "team/platform"]}),
    ]  # not tags: "#not-a-tag" in code, `#1e90ff`, "#1984" (digits only), "[[Meeting notes#2024-11-02|...]]"
    assert report.skipped == [(".obsidian/", "hidden (basic-memory and Obsidian ignore dot files and folders)"),
                              ("Heron board.canvas", "not a .md file")]
    assert read("markdown", vault)[0] == records


def test_markdown_front_matter_without_yaml_and_empty_notes(tmp_path) -> None:
    (tmp_path / "unclosed.md").write_text("---\ntitle: Never closed\n\nBody #real\n", encoding="utf-8")
    (tmp_path / "odd.md").write_text(
        '\ufeff---\ntitle: "Quoted: title"  \ntag: [\'one\', "two, three"]\ncreated: someday\nnested:\n'
        '  key: value\n---\nText.\n', encoding="utf-8")
    (tmp_path / "blank.md").write_text(" \n\n", encoding="utf-8")
    os.utime(tmp_path / "odd.md", (MTIME, MTIME))
    records, report = read("markdown", tmp_path)
    assert [(r["source_id"], r["title"], r["labels"]) for r in records] == [
        ("odd.md", "Quoted: title", {"tags": ["one", "two", "three"]}),  # split on commas, as parse_tags does
        ("unclosed.md", "unclosed", {"tags": ["real"]})]  # python-frontmatter: no closing ---, no front matter
    assert records[0]["ts"] == "2025-01-02T03:04:05Z"  # "someday" is no time: the file's mtime
    assert report.skipped == [("blank.md", "empty")]


def test_markdown_a_file_not_utf8_is_refused_with_its_line(tmp_path) -> None:
    path = tmp_path / "notes" / "latin1.md"
    path.parent.mkdir()
    path.write_bytes("---\ntitle: Café\n---\nCrème brûlée\n".encode("latin-1"))
    assert "not UTF-8 (byte 14)" in str(refused("markdown", tmp_path, "line 2", "content", file=path))


# ---- every format: what memtrove's import takes ---------------------------------------------------------

def every_format(tmp_path: Path) -> dict[str, Path]:
    tmp_path.mkdir(exist_ok=True)
    return {"reference": copied(tmp_path, "memory.jsonl"),
            "mcp-memory-service": maker().build(tmp_path / "sqlite_vec.db"),
            "markdown": shutil.copytree(FIXTURES / "vault", tmp_path / "vault"),
            "claude": FIXTURES / "claude" / "conversations.json",
            "chatgpt": FIXTURES / "chatgpt" / "conversations.json"}


MEMORY_KEYS = ["kind", "id", "type", "confidence", "ts", "conversation_id", "sensitivity", "visibility_scope",
               "retention_policy", "content"]
TURN_KEYS = ["kind", "conversation_id", "turn_index", "role", "ts", "sensitivity", "visibility_scope",
             "retention_policy", "content"]
ARTIFACT_KEYS = ["kind", "id", "artifact_type", "source_system", "source_id", "source_url", "title", "author",
                 "participants", "ts", "chunker", "chunked", "labels", "sensitivity", "visibility_scope",
                 "retention_policy", "content"]
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z")


def within_limits(record: dict[str, Any]) -> None:
    if record["kind"] in ("entity", "relation"):  # the graph's: no time, no privacy of their own
        assert list(record) in (["kind", "name", "entity_type", "observations"],
                                ["kind", "from", "to", "relation_type"])
        assert all(1 <= len(v) <= 500 for k, v in record.items() if k not in ("kind", "observations"))
        assert all(1 <= len(o) <= 10_000 for o in record.get("observations", []))
        return
    assert TS.fullmatch(record["ts"]) and {k: record[k] for k in PRIVACY} == PRIVACY
    content = record["content"]
    assert isinstance(content, str) and content.strip() and "\x00" not in content
    if record["kind"] == "memory":
        assert list(record) == MEMORY_KEYS and re.fullmatch(r"mem_[0-9a-f]{32}", record["id"])
        assert record["type"] in ("preference", "fact", "project", "decision") and 0 <= record["confidence"] <= 1
        assert record["conversation_id"] is None or len(record["conversation_id"]) <= 100
        assert len(content) <= 10_000
    elif record["kind"] == "turn":
        assert list(record) == TURN_KEYS and 1 <= len(record["conversation_id"]) <= 100
        assert isinstance(record["turn_index"], int) and record["turn_index"] >= 0
        assert record["role"] in ("user", "assistant", "system") and len(content) <= 50_000
        assert record["role"] != "system" or (record["turn_index"], content[:7]) == (0, "Title: ")  # a title
    else:
        assert list(record) == ARTIFACT_KEYS and record["kind"] == "artifact" and record["id"] is None
        assert record["artifact_type"] in ("doc", "note")
        assert 1 <= len(record["source_system"]) <= 100 and 1 <= len(record["source_id"]) <= 500
        assert record["title"] is None or 1 <= len(record["title"]) <= 500
        assert (record["author"], record["participants"], record["chunker"], record["chunked"]) == (None, [], None, True)
        assert record["source_url"] is None or re.fullmatch(r"https://claude\.ai/chat/[0-9a-f-]{36}", record["source_url"])
        labels = record["labels"]
        assert set(labels) <= {"tags", "source", "category", "title"}
        assert all(isinstance(t, str) and 1 <= len(t) <= 100 for t in labels["tags"])
        assert all(isinstance(v, str) for k, v in labels.items() if k != "tags")
        assert len(content.encode("utf-8")) <= 10_000_000


def importer(world) -> ImportRecords:
    me = RequestContext(Principal("local"))
    identity = lambda: me  # noqa: E731
    memory = StoreMemory(world.embedder, world.store, world.split, world.tokenizer, identity=identity)
    turns = AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer, identity=identity)
    ingest = IngestArtifact(world.embedder, world.store, world.store, catalog(TokenWindowChunker()),
                            world.tokenizer, ChunkSpec(30, 5, 30), world.split, identity=identity)
    return ImportRecords(world.store, world.store, memory, turns, ingest, world.store, ItemWriter(world.store, ingest),
                         world.store, identity, time.time)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_record_is_taken_by_memtroves_import_and_a_second_import_adds_nothing(world, tmp_path, fmt) -> None:
    records, _ = read(fmt, every_format(tmp_path)[fmt])
    assert records
    for record in records:
        within_limits(record)
    restore = importer(world)
    assert restore(records, check=True) == {"added": len(records), "unchanged": 0, "expired": 0}
    assert restore(records) == {"added": len(records), "unchanged": 0, "expired": 0}
    assert restore(read(fmt, every_format(tmp_path / "again")[fmt])[0]) == {"added": 0, "unchanged": len(records), "expired": 0}


def test_an_unknown_format_or_a_missing_path_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown format 'letta'"):
        list(read_foreign("letta", tmp_path, Report()))
    refused("claude", tmp_path / "conversations.json", "path", "path")
    refused("markdown", tmp_path / "no-vault", "path", "path")
