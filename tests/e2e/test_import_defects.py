"""``memtrove import`` on the files issue 41 found breaking it, run as a user runs it (real processes, a
shared server on a real SQLite store, a local stand-in for the embedding API):

- a file whose memories' supersession links are broken (a memory superseding itself, two superseding
  each other, ``superseded_by`` naming nothing, ``valid_to`` before ``valid_from``), one whose broken
  pair straddles two store_import calls, a NaN confidence, a 5,001-digit integer, nesting 3,000 deep
  (also ``--from reference``) and a 200 MB line: each refused whole, exit 2, one line naming the line and
  the field, no traceback, and every table of the store as it was;
- a file whose history straddles calls comes in whole, its links as they were;
- the server killed mid-import: one line saying so and how to finish, no traceback.

And over HTTP with two callers: Bob's store_import of a record under Alice's memory id is answered
exactly as one under an id nobody holds, and Alice's memory is untouched."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import (blocking, http_server, http_session, memtrove_command, owner_pid, run_cli,
                                     server_env, stop_owner)
from tests.support.store_state import wait_until_settled

pytestmark = pytest.mark.slow

DIMS = 32
HEADER = '{"memtrove_export": 1}'
ID = ["mem_" + f"{n:032x}" for n in range(1, 1000)]


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


@pytest.fixture(scope="module")
def env(fake: QuickFakeOpenAIServer) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "120", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS),
            "MEMTROVE_TOOLSETS": "core"}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Iterator[Path]:
    """A store holding one memory already (so 'as it was' is not merely 'empty')."""
    root = tmp_path_factory.mktemp("import-defects")
    first = root / "first.jsonl"
    write(first, [memory(ID[900], "The lighthouse lamp is amber.")])
    done = run_cli(["import", str(first)], root / "data", env, timeout=180)
    assert done.returncode == 0, done.stderr
    yield root / "data"
    stop_owner(root / "data")


def memory(memory_id: str, content: str, ts: str = "2025-01-01T00:00:00Z", **more: Any) -> dict[str, Any]:
    return {"kind": "memory", "id": memory_id, "type": "fact", "confidence": 0.9, "ts": ts, "conversation_id": None,
            "sensitivity": "normal", "visibility_scope": "me", "retention_policy": "forever", "content": content,
            **more}


def write(path: Path, records: list[Any], raw: list[str] = ()) -> Path:  # type: ignore[assignment]
    path.write_text("\n".join([HEADER, *(json.dumps(r) for r in records), *raw]) + "\n", encoding="utf-8")
    return path


def tables(data: Path) -> dict[str, str]:
    """A digest of every row of every table of the SQLite store, read beside the running server."""
    with closing(sqlite3.connect(f"file:{data / 'memtrove.sqlite3'}?mode=ro", uri=True, timeout=30)) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%'")]
        return {name: hashlib.sha256(repr(sorted(map(repr, db.execute(f'SELECT * FROM "{name}"')))).encode())
                .hexdigest() for name in names}


def refused(data: Path, env: dict[str, str], path: Path, *args: str) -> str:
    # An earlier import's vectors and graph follow it in the background: wait, or 'as it was' would race them.
    wait_until_settled(f"sqlite:///{data / 'memtrove.sqlite3'}")
    before = tables(data)
    done = run_cli(["import", *args, str(path)], data, env, timeout=300)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.startswith("memtrove: "), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert tables(data) == before
    return done.stderr


ENDED = "2025-06-01T00:00:00Z"
BROKEN_LINKS = [
    ("supersedes-itself", [memory(ID[1], "Loops.", supersedes=ID[1])], 2, "supersedes"),
    ("two-supersede-each-other", [memory(ID[1], "One.", supersedes=ID[2], superseded_by=ID[2], valid_to=ENDED),
                                  memory(ID[2], "Two.", supersedes=ID[1], superseded_by=ID[1], valid_to=ENDED)],
     2, "superseded_by"),
    ("superseded-by-nothing", [memory(ID[1], "Hidden for good?", superseded_by=ID[2], valid_to=ENDED)], 2,
     "superseded_by"),
    ("valid-to-before-valid-from", [memory(ID[1], "Backwards.", valid_from="2025-03-01T00:00:00Z",
                                           valid_to="2025-02-01T00:00:00Z")], 2, "valid_to"),
]


@pytest.mark.parametrize("records, line, field", [c[1:] for c in BROKEN_LINKS], ids=[c[0] for c in BROKEN_LINKS])
def test_broken_links_are_refused_whole(tmp_path: Path, data: Path, env: dict[str, str], records: list[Any],
                                        line: int, field: str) -> None:
    path = write(tmp_path / "links.jsonl", [memory(ID[3], "A fine memory."), *records])
    said = refused(data, env, path)
    assert f"{path}: line {line + 1}: " in said and f"(field {field}): nothing was imported" in said, said


def history(old: str, new: str) -> list[dict[str, Any]]:
    return [memory(new, "Ana likes coffee.", "2025-06-02T00:00:00Z", supersedes=old),
            memory(old, "Ana likes tea.", valid_to="2025-06-02T00:00:00Z", superseded_by=new)]


def test_links_across_calls_are_checked_whole_and_come_in_whole(tmp_path: Path, data: Path,
                                                               env: dict[str, str]) -> None:
    filler = [memory(ID[100 + n], f"Filler note {n}.") for n in range(250)]  # past one call's 200 records
    newer, older = history(ID[10], ID[11])
    broken = write(tmp_path / "split.jsonl", [{**newer, "supersedes": ID[12]}, *filler, older])
    said = refused(data, env, broken)
    assert f"line {len(filler) + 3}: superseded_by names {ID[11]}, whose supersedes is {ID[12]}" in said, said
    whole = write(tmp_path / "whole.jsonl", [newer, *filler, older])
    done = run_cli(["import", str(whole), "--json"], data, env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 252
    with closing(sqlite3.connect(f"file:{data / 'memtrove.sqlite3'}?mode=ro", uri=True, timeout=30)) as db:
        links = dict(db.execute("SELECT id, superseded_by FROM memories WHERE id IN (?, ?)", (ID[10], ID[11])))
    assert links == {ID[10]: ID[11], ID[11]: None}


def test_values_json_cannot_carry_are_named(tmp_path: Path, data: Path, env: dict[str, str]) -> None:
    nan = write(tmp_path / "nan.jsonl", [], [json.dumps(memory(ID[5], "Sure?")).replace("0.9", "NaN")])
    assert "line 2: confidence is not a finite number (NaN) (field confidence)" in refused(data, env, nan)
    digits = write(tmp_path / "digits.jsonl", [], [json.dumps(memory(ID[5], "Sure?")).replace("0.9", "1" * 5001)])
    assert "line 2: confidence is an integer of 5,001 digits" in refused(data, env, digits)
    deep = json.dumps({**memory(ID[5], "Deep."), "labels": "X"}).replace('"X"', "[" * 3000 + "]" * 3000)
    path = write(tmp_path / "deep.jsonl", [], [deep])
    said = refused(data, env, path)
    assert f"{path}:2: nested deeper than 197 levels" in said, said
    reference = tmp_path / "memory.jsonl"
    reference.write_text('{"type":"entity","name":"A","entityType":"thing","observations":' + "[" * 3000
                         + "]" * 3000 + "}\n", encoding="utf-8")
    said = refused(data, env, reference, "--from", "reference")
    assert f"{reference}: line 1: the line is nested deeper than 197 levels" in said, said


def test_a_200_mb_line_is_refused_unread(tmp_path: Path, data: Path, env: dict[str, str]) -> None:
    path = tmp_path / "huge.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        out.write(HEADER + '\n{"kind":"memory","content":"')
        block = "a" * 1_000_000
        for _ in range(200):
            out.write(block)
        out.write('"}\n')
    said = refused(data, env, path)
    assert f"{path}:2: the line is over 67,108,864 bytes, longer than any record: it was not read further" in said


def test_the_server_killed_mid_import_is_said_in_a_line(tmp_path: Path, env: dict[str, str]) -> None:
    data = tmp_path / "data"
    path = write(tmp_path / "many.jsonl", [memory(f"mem_{n:032x}", f"Note {n}.") for n in range(1, 3001)])
    process = subprocess.Popen([*memtrove_command(), "import", str(path)], env=server_env(data, env),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:  # not a terminal: a plain line a call
            if line.endswith("records read\n"):
                pid = owner_pid(data)
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
                break
        out, rest = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
        stop_owner(data)
    assert process.returncode == 1, (process.returncode, out, rest)
    assert "Traceback" not in rest and rest.startswith("memtrove: "), rest
    assert "stopped answering" in rest and "run the import again to complete it" in rest, rest
    assert len(rest.strip().splitlines()) == 1, rest


def test_anothers_memory_id_is_answered_as_a_free_one_over_http(tmp_path: Path, env: dict[str, str]) -> None:
    from domain.transfer.owned import derived
    from tests.e2e.test_principals_http import create_token

    data = tmp_path / "data"
    http_env = {**{k: v for k, v in env.items() if k != "MEMTROVE_SHARED"}, "MEMTROVE_TOOLSETS": "core,console",
                "MEMTROVE_LOCAL_CLEARANCE": "highly_sensitive"}
    tokens = {user: create_token(data, user)[1] for user in ("alice", "bob")}
    with http_server(data, http_env, token="the-owners-shared-token") as server:
        with blocking(http_session(server.mcp_url, tokens["alice"])) as alice:
            made = alice.call("memory_store", {"content": "Alice's plan: move to Lisbon.", "type": "fact",
                                               "confidence": 1.0}).structured_content
            before = alice.call("memory_get", {"memory_id": made["id"]}).structured_content
        with blocking(http_session(server.mcp_url, tokens["bob"])) as bob:
            taken, free = memory(made["id"], "Bob's note."), memory(ID[7], "Bob's note.")

            def answers(record: dict[str, Any]) -> list[Any]:
                def plain(text: str) -> str:  # the id asked about, and the one Bob's copy has, as "ID"
                    return text.replace(record["id"], "ID").replace(derived("bob", record["id"]), "ID")

                said = []
                for arguments in ({"check": True}, {}, {}, {"records": [{**record, "content": "Changed."}]},
                                  {"records": [memory(ID[8], "Older.", superseded_by=record["id"], valid_to=ENDED)]}):
                    got = bob.call("store_import", {"records": [record], **arguments})
                    said.append((got.is_error, plain(json.dumps(got.structured_content))))
                found = bob.call("memory_get", {"memory_id": record["id"]})
                said.append((found.is_error, plain(found.content[0].text)))
                return said

            told = answers(taken)
            assert told == answers(free), told  # nothing in any answer tells the two apart
            assert [is_error for is_error, _ in told] == [False, False, False, True, True, True]
            listed = bob.call("memory_list", {"limit": 100}).structured_content["results"]
            for check in (0, [], {}, "", None):  # only true or false: anything else is refused, nothing written
                got = bob.call("store_import", {"records": [memory(ID[9], "Not written.")], "check": check})
                assert got.is_error and got.structured_content["error"]["field"] == "check", got
            assert bob.call("memory_list", {"limit": 100}).structured_content["results"] == listed
        with blocking(http_session(server.mcp_url, tokens["alice"])) as alice:
            assert alice.call("memory_get", {"memory_id": made["id"]}).structured_content == before
