"""The command line for people, run as a user runs it (real ``memtrove`` processes), beside an agent's
MCP client on the same data dir: what one writes the other reads at once; a second ingest is all
no-ops; a changed file is replaced and a vanished one removed with --sync; a killed ingest resumes;
bad usage exits 2, a refusal 1; a data dir served over HTTP is reached through its URL and token."""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import (blocking, http_server, http_session, memtrove_command, run_cli, server_env,
                                     stdio_session, stop_owner)

pytestmark = pytest.mark.slow

DIMS = 32


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


@pytest.fixture
def env(fake: QuickFakeOpenAIServer) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "120", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS),
            "MEMTROVE_TOOLSETS": "core"}


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    yield data
    stop_owner(data)


def cli(data: Path, env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = run_cli(list(args), data, env, timeout=180)
    assert done.returncode == code, f"memtrove {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def as_json(data: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    return json.loads(cli(data, env, *args, "--json").stdout)


def notes(root: Path) -> Path:
    (root / "sub" / "deep").mkdir(parents=True)
    (root / ".obsidian").mkdir()
    (root / "ferry.md").write_text("# Ferry\n\nThe ferry to Vellmar leaves at nine from pier four.\n")
    (root / "sub" / "release.md").write_text("Release checklist: roll back with deploy --undo-quartz.\n")
    (root / "sub" / "deep" / "draft.md").write_text("A draft nobody should index.\n")
    (root / "sub" / ".gitignore").write_text("deep/\n*.tmp\n")
    (root / "sub" / "scratch.tmp").write_text("temporary\n")
    (root / ".obsidian" / "workspace.json").write_text("{}\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "huge.txt").write_bytes(b"a" * 10_000_001)
    return root


def test_ingest_a_folder_again_changed_and_synced_beside_an_agent(tmp_path: Path, data_dir: Path,
                                                                   env: dict[str, str]) -> None:
    root = notes(tmp_path / "notes")
    first = as_json(data_dir, env, "ingest", str(root))
    assert (first["files"], first["ingested"], first["unchanged"]) == (5, 2, 0), first
    assert {Path(s["path"]).name: s["reason"].split()[0] for s in first["skipped"]} == {
        "logo.png": "binary", "latin1.txt": "not", "huge.txt": "10,000,001"}
    assert first["chunks"] >= 2 and first["failed"] == [] and first["removed"] == []

    with blocking(stdio_session(data_dir, env)) as agent:  # the agent shares the same server
        found = agent.call("hybrid_search", {"query": "undo-quartz", "limit": 3}).structured_content
        assert [h["provenance"]["title"] for h in found["results"]][:1] == ["release.md"], found
        again = as_json(data_dir, env, "ingest", str(root))
        assert (again["ingested"], again["replaced"], again["unchanged"]) == (0, 0, 2), again

        (root / "ferry.md").write_text("# Ferry\n\nThe ferry to Vellmar now leaves at ten from pier six.\n")
        (root / "sub" / "release.md").unlink()
        synced = as_json(data_dir, env, "ingest", str(root), "--sync")
        assert (synced["replaced"], synced["unchanged"]) == (1, 0) and synced["removed"] == [
            str((root / "sub" / "release.md").resolve())], synced
        assert agent.call("hybrid_search", {"query": "undo-quartz", "limit": 3, "mode": "lexical"}).structured_content[
            "results"] == []
        hits = agent.call("hybrid_search", {"query": "ferry pier six", "limit": 3}).structured_content["results"]
        assert hits and "pier six" in (hits[0].get("snippet") or hits[0].get("content"))

    listed = as_json(data_dir, env, "list", "artifacts")
    assert [a["source_id"] for a in listed["results"]] == [str((root / "ferry.md").resolve())]
    only = as_json(data_dir, env, "ingest", str(root), "--include", "*.md", "--exclude", "ferry.md")
    assert only["files"] == 0, only


def test_commands_read_change_and_delete_what_an_agent_stored(data_dir: Path, env: dict[str, str]) -> None:
    with blocking(stdio_session(data_dir, env)) as agent:
        long = "Rollback: run deploy --undo, then " + "check every dashboard twice; " * 40 + "and page the on-call."
        stored = agent.call("memory_store", {"content": long, "type": "decision", "confidence": 0.9})
        memory_id = stored.structured_content["id"]
        agent.call("history_append", {"conversation_id": "standup", "role": "user", "turn_index": 0,
                                      "content": "We ship the harbour release on Friday."})
        listed = as_json(data_dir, env, "list", "--type", "decision")
        assert [m["id"] for m in listed["results"]] == [memory_id]
        shown = cli(data_dir, env, "show", memory_id).stdout
        assert "and page the on-call." in shown  # whole, not a snippet
        thread = cli(data_dir, env, "show", "standup").stdout
        assert "harbour release on Friday" in thread
        found = as_json(data_dir, env, "search", "rollback with deploy undo and page the on-call")
        assert memory_id in [h["id"] for h in found["results"]], found  # memories are searched too
        hits = as_json(data_dir, env, "search", "harbour release", "--filter", "conversation_id=standup")
        assert hits["results"] and hits["results"][0]["type"] == "history", hits
        stats = as_json(data_dir, env, "stats")
        assert stats["memories"] == {"decision": 1} and (stats["turns"], stats["conversations"]) == (1, 1)
        assert stats["database_bytes"] > 0 and stats["data_dir_bytes"] >= stats["database_bytes"]
        assert cli(data_dir, env, "delete", memory_id).stdout.strip() == f"Deleted memory: {memory_id}"
        gone = agent.call("memory_get", {"memory_id": memory_id})
        assert gone.is_error and "not found" in gone.content[0].text


def test_bad_usage_exits_2_and_a_refusal_1(tmp_path: Path, data_dir: Path, env: dict[str, str]) -> None:
    missing = cli(data_dir, env, "ingest", str(tmp_path / "nowhere"), code=2)
    assert "no such file or folder" in missing.stderr and missing.stdout == "" and "PATH" not in missing.stderr
    assert "limit" in cli(data_dir, env, "search", "x", "--limit", "0", code=2).stderr
    assert "--filter takes KEY=VALUE" in cli(data_dir, env, "search", "x", "--filter", "nokey", code=2).stderr
    assert "invalid choice" in cli(data_dir, env, "list", "everything", code=2).stderr
    assert "not found" in cli(data_dir, env, "show", "art_" + "0" * 32, code=1).stderr
    assert "a memory id (mem_...) or an artifact id" in cli(data_dir, env, "delete", "standup", code=2).stderr
    unknown = cli(data_dir, env, "show", "no-such-conversation", code=1)
    assert "no conversation 'no-such-conversation'" in unknown.stderr and unknown.stdout == ""
    nowhere = cli(data_dir, env, "export", str(tmp_path / "gone" / "out.jsonl"), code=2).stderr
    assert f"its folder {tmp_path / 'gone'} does not exist" in nowhere, nowhere
    assert "PATH" not in nowhere and ".out.jsonl." not in nowhere  # no temporary file, no metavar
    assert as_json(data_dir, env, "stats")["artifacts"] == {"by_type": {}, "by_source": {}}  # nothing changed


def test_stats_and_list_speak_to_people(data_dir: Path, env: dict[str, str]) -> None:
    with blocking(stdio_session(data_dir, env)) as agent:
        for n in range(3):
            agent.call("memory_store", {"content": f"Listed fact number {n}", "type": "fact", "confidence": 0.5})
    stats = cli(data_dir, env, "stats").stdout
    assert "memories:      3 (3 fact)" in stats and "{" not in stats, stats  # not the JSON answer
    listed = cli(data_dir, env, "list", "--limit", "2").stdout
    cursor = re.search(r"More: memtrove list --cursor (\S+)", listed)
    assert cursor and "cursor=" not in listed, listed
    rest = cli(data_dir, env, "list", "--limit", "2", "--cursor", cursor.group(1)).stdout
    assert "Listed fact number" in rest and "More:" not in rest, rest


def test_a_killed_ingest_goes_on_where_it_stopped(tmp_path: Path, data_dir: Path, env: dict[str, str],
                                                 fake: QuickFakeOpenAIServer) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(30):
        (root / f"note-{i:02d}.md").write_text(f"Note {i}: the locker code for bay {i} is {1000 + i}.\n" * 3)
    command = [*memtrove_command(), "ingest", str(root)]
    slow = {**env, "OPENAI_BASE_URL": fake.base_url}
    fake.document_delay = 0.0
    process = subprocess.Popen(command, env=server_env(data_dir, slow), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = 0
    assert process.stderr is not None
    for line in process.stderr:  # not a terminal: one plain line per file
        seen += line.startswith("indexed")
        if seen >= 5:
            os.kill(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert seen >= 5
    rest = as_json(data_dir, env, "ingest", str(root))
    assert rest["ingested"] + rest["unchanged"] == 30 and rest["unchanged"] >= 5, rest
    assert len(as_json(data_dir, env, "list", "artifacts", "--limit", "100")["results"]) == 30


def test_a_data_dir_served_over_http_is_reached_through_its_url(data_dir: Path, env: dict[str, str]) -> None:
    http_env = {k: v for k, v in env.items() if k != "MEMTROVE_SHARED"}
    with http_server(data_dir, http_env, token="s3cret-shared-token") as server:
        lacking = cli(data_dir, {**http_env, "MEMTROVE_TOKEN": "s3cret-shared-token"}, "stats", code=1)
        assert "does not offer store_stats: start it with MEMTROVE_TOOLSETS naming core, console" in lacking.stderr
    http_env["MEMTROVE_TOOLSETS"] = "core,console"
    with http_server(data_dir, http_env, token="s3cret-shared-token") as server:
        with blocking(http_session(server.mcp_url, token="s3cret-shared-token")) as agent:
            agent.call("memory_store", {"content": "The vault opens at dawn.", "type": "fact", "confidence": 1.0})
        refused = cli(data_dir, {**http_env, "MEMTROVE_HTTP_TOKEN": ""}, "stats", code=1)
        assert "did not accept this connection" in refused.stderr and "MEMTROVE_TOKEN" in refused.stderr
        stats = as_json(data_dir, {**http_env, "MEMTROVE_TOKEN": "s3cret-shared-token"}, "stats")
        assert stats["memories"] == {"fact": 1}


def test_export_import_round_trip_twice_and_a_bad_line(tmp_path: Path, data_dir: Path, env: dict[str, str]) -> None:
    everything = {**env, "MEMTROVE_TOOLSETS": "all"}
    with blocking(stdio_session(data_dir, everything)) as agent:
        for content, extra in (("The quokka is named Pemberton.", {}),
                               ("Deploys freeze on Fridays.", {"visibility_scope": "custom", "visible_to": ["carol"],
                                                               "retention_policy": "custom", "retention_days": 400})):
            assert not agent.call("memory_store", {"content": content, "type": "fact", "confidence": 0.8,
                                                   **extra}).is_error
        for i, text in enumerate(("Shall we ship on Friday?", "Yes, after the freeze lifts.")):
            assert not agent.call("history_append", {"conversation_id": "ship", "role": ("user", "assistant")[i % 2],
                                                     "content": text, "turn_index": i,
                                                     "ts": f"2025-05-0{i + 1}T10:00:00Z"}).is_error
        long = "# Runbook\n\n" + "\n\n".join(f"## Step {i}\n\nTurn valve {i} clockwise twice." for i in range(60))
        assert not agent.call("artifact_ingest", {"artifact_type": "doc", "source_system": "wiki", "source_id": "rb",
                                                  "content": long, "ts": "2025-04-01T00:00:00Z"}).is_error
        assert not agent.call("store_report", {"agent_id": "agent-7", "session_id": "s1", "session_iter": "v2",
                                               "content": "# Report\n\nAll valves turned."}).is_error
        assert not agent.call("add_memory", {"text": "Lighthouse lamp changed.",
                                             "metadata": {"tags": ["lamp"], "source": "log"}}).is_error
        for n, text in enumerate(("# Lamp spec\n\nA 40 W lamp.", "# Lamp spec\n\nA 60 W lamp, amber glass.")):
            assert not agent.call("canonical_upsert", {"canonicalKey": "lamp", "docClass": "app_spec",
                                                       "title": "Lamp spec", "contentMarkdown": text,
                                                       "idempotencyKey": f"lamp-{n}"}).is_error
    first = tmp_path / "first.jsonl"
    exported = as_json(data_dir, env, "export", str(first))
    assert (exported["memory"], exported["turn"], exported["artifact"], exported["document"]) == (2, 2, 3, 2), exported
    lines = first.read_text().splitlines()
    assert lines[0] == '{"memtrove_export": 1}' and len(lines) == 10
    custom = next(json.loads(x) for x in lines if "freeze on" in x)
    assert custom["visible_to"] == ["carol"] and custom["retention_days"] == 400

    readable = as_json(data_dir, env, "export", str(tmp_path / "md"), "--format", "markdown")
    files = sorted(p.relative_to(tmp_path / "md").as_posix() for p in (tmp_path / "md").rglob("*.md"))
    assert readable["files"] == len(files) == 8 and "conversations/ship.md" in files and "artifacts/wiki/rb.md" in files
    assert [f for f in files if f.startswith("documents/") and f.endswith("/lamp/v2.md")], files
    thread = (tmp_path / "md" / "conversations" / "ship.md").read_text()
    assert thread.index("Shall we ship on Friday?") < thread.index("Yes, after the freeze lifts.")
    assert (tmp_path / "md" / "artifacts" / "wiki" / "rb.md").read_text().startswith('---\nkind: "artifact"\n')

    other = tmp_path / "other"
    try:
        assert as_json(other, env, "import", str(first))["added"] == 9
        second = tmp_path / "second.jsonl"
        as_json(other, env, "export", str(second))
        assert second.read_bytes() == first.read_bytes()  # the same file, byte for byte
        again = as_json(other, env, "import", str(first))
        assert (again["added"], again["unchanged"]) == (0, 9)
        hits = as_json(other, env, "search", "valve 42 clockwise")["results"]
        assert hits and hits[0]["provenance"]["source_id"] == "rb"
        lamp = as_json(other, env, "search", "amber glass lamp")["results"]
        assert lamp and "amber glass" in json.dumps(lamp[0])  # the document's newest version, searchable again

        bad = tmp_path / "bad.jsonl"
        broken = [json.loads(x) for x in lines[1:]]
        broken[4]["ts"] = "yesterday"
        bad.write_text("\n".join([lines[0], *(json.dumps(r) for r in broken)]) + "\n")
        fresh = tmp_path / "fresh"
        refused = cli(fresh, env, "import", str(bad), code=2)
        assert f"{bad}: line 6:" in refused.stderr and "(field ts)" in refused.stderr, refused.stderr
        assert as_json(fresh, env, "stats")["chunks"] == 0 and as_json(fresh, env, "list")["count"] == 0
        twice = [broken[0], {**broken[0], "content": "Another text under the same id."}]
        bad.write_text("\n".join([lines[0], *(json.dumps(r) for r in twice)]) + "\n")
        clash = cli(fresh, env, "import", str(bad), code=2)
        assert "line 3: names the same memory as line 2 with other content" in clash.stderr, clash.stderr
        assert as_json(fresh, env, "list")["count"] == 0
        bad.write_text("not json\n")
        assert f"{bad}:1: not a memtrove export" in cli(fresh, env, "import", str(bad), code=2).stderr
    finally:
        stop_owner(other)
        stop_owner(tmp_path / "fresh")


def test_memory_from_other_tools_is_imported_once(tmp_path: Path, data_dir: Path, env: dict[str, str]) -> None:
    import importlib.util

    fixtures = Path(__file__).parents[1] / "fixtures" / "imports"
    spec = importlib.util.spec_from_file_location("make_mcp_memory_service", fixtures / "make_mcp_memory_service.py")
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    maker.build(tmp_path / "sqlite_vec.db")
    sources = {"reference": fixtures / "memory.jsonl", "claude": fixtures / "claude" / "conversations.json",
               "chatgpt": fixtures / "chatgpt" / "conversations.json", "markdown": fixtures / "vault",
               "mcp-memory-service": tmp_path / "sqlite_vec.db"}
    first = {name: as_json(data_dir, env, "import", "--from", name, str(path)) for name, path in sources.items()}
    assert all(r["added"] > 0 and r["unchanged"] == 0 for r in first.values()), first
    assert any("soft-deleted" in s["why"] for s in first["mcp-memory-service"]["skipped"])
    again = as_json(data_dir, env, "import", "--from", "chatgpt", str(sources["chatgpt"]))
    assert (again["added"], again["unchanged"]) == (0, first["chatgpt"]["added"])
    stats = as_json(data_dir, env, "stats")
    assert first["reference"]["added"] == 6 and stats["memories"] == {}  # the reference's file: the graph
    said = cli(data_dir, env, "export", str(tmp_path / "all.jsonl")).stdout
    assert "3 entities" in said and "entitys" not in said and "memorys" not in said, said
    graph = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()[1:]]
    assert [r["kind"] for r in graph if r["kind"] in ("entity", "relation")] == ["entity"] * 3 + ["relation"] * 3
    again = as_json(data_dir, env, "import", "--from", "reference", str(sources["reference"]))
    assert (again["added"], again["unchanged"]) == (0, 6)
    attached = 4  # the Claude export's attachments and artifact (tests/e2e/test_import_chat_exports.py)
    assert stats["turns"] == first["claude"]["added"] - attached + first["chatgpt"]["added"]
    assert stats["artifacts"]["by_source"] == {"markdown": first["markdown"]["added"], "claude": attached,
                                               "mcp-memory-service": first["mcp-memory-service"]["added"]}
    wrong = cli(data_dir, env, "import", "--from", "claude", str(sources["reference"]), code=2)
    assert f"{sources['reference']} looks like the MCP reference memory server's" in wrong.stderr  # and says so
