"""``memtrove import --from claude|chatgpt`` run as a user runs it (real processes, a shared server on a real
SQLite store, a local stand-in for the embedding API), on the exports' real shapes (tests/fixtures/imports):

- every named conversation keeps its name (its first turn, ``Title: <name>``), shown by ``memtrove show``;
- a Claude attachment's extracted text and the artifact Claude made are artifacts, listed and found;
- what is left out (thinking, tool calls, a file whose content the export lacks) is a printed line each;
- ChatGPT's ``parts`` given as one string comes in as text;
- a Claude export imported without --from, or with the wrong one, is named with the command that imports
  it, exit 2, nothing written; so is a memtrove export given --from reference;
- a newer export in which a conversation was renamed imports (the stored title kept, said), and the same
  file twice adds nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import run_cli, stop_owner

pytestmark = pytest.mark.slow

DIMS = 32
FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"
CLAUDE, CHATGPT = FIXTURES / "claude" / "conversations.json", FIXTURES / "chatgpt" / "conversations.json"
REPLICA, LISBON = "claude-5f2c1b9e-8d4a-4c3e-9a71-0b6e2d9c4f10", "claude-7b3f9c2e-1d4a-4e8b-9c6d-2f0a1b3c4d5e"


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as fake:
        yield {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "120", "MEMTROVE_EMBEDDER": "openai-compatible",
               "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS),
               "MEMTROVE_TOOLSETS": "core"}


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"
    stop_owner(tmp_path / "data")


def cli(data: Path, env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = run_cli(list(args), data, env, timeout=180)
    assert done.returncode == code, f"memtrove {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


def as_json(data: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    return json.loads(cli(data, env, *args, "--json").stdout)


def test_a_claude_export_keeps_names_attachments_artifacts_and_says_what_it_leaves_out(
        tmp_path: Path, data_dir: Path, env: dict[str, str]) -> None:
    plain = cli(data_dir, env, "import", str(CLAUDE), code=2)  # no --from: named, with the command to run
    assert plain.stderr.strip() == (f"memtrove: {CLAUDE} looks like a Claude export (conversations.json), not a "
                                    f"memtrove export: run memtrove import --from claude {CLAUDE}"), plain.stderr
    wrong = cli(data_dir, env, "import", "--from", "chatgpt", str(CLAUDE), code=2)
    assert f"not a ChatGPT export (conversations.json): run memtrove import --from claude {CLAUDE}" in wrong.stderr
    assert as_json(data_dir, env, "stats")["turns"] == 0  # nothing written by either

    done = cli(data_dir, env, "import", "--from", "claude", str(CLAUDE))
    said = done.stdout.splitlines()
    assert said[0].startswith(f"imported {CLAUDE}: 15 added, 0 already stored, 0 expired (left out), 5 skipped"), said
    assert said[1:] == [
        "  skipped line 2: conversation 0, message 1: left out of the turn: 1 thinking block, 1 web_search call, "
        "1 web_search result (the model's reasoning and its tool use, not what was said)",
        "  skipped line 186: conversation 2: a conversation without messages",
        "  skipped line 196: conversation 3, message 0, file 'receipt.jpg': the export holds only its name, not its "
        "content",
        "  skipped line 196: conversation 3, message 1: left out of the turn: 1 thinking block (the model's "
        "reasoning and its tool use, not what was said)",
        "  skipped line 196: conversation 3, message 3: no text (only 1 thinking block)"]

    shown = cli(data_dir, env, "show", LISBON).stdout.splitlines()
    assert shown[:3] == ["[0] system: Title: Lisbon trip: budget for 4 days",
                         "[1] user: Here is what I have spent so far. Can you make me a budget for the remaining days?",
                         ""], shown
    assert "[attached: spending.csv]" in shown and "[artifact: Lisbon budget]" in shown
    assert cli(data_dir, env, "show", REPLICA).stdout.startswith("[0] system: Title: Postgres replica lagging\n")
    listed = as_json(data_dir, env, "list", "artifacts", "--source-system", "claude")
    titles = {a["title"]: a for a in listed["results"]}
    assert set(titles) == {"postgresql.conf", "spending.csv", "pasted text", "Lisbon budget"}, listed
    budget = as_json(data_dir, env, "show", titles["Lisbon budget"]["artifact_id"])
    assert budget["metadata"]["source_url"] == "https://claude.ai/chat/7b3f9c2e-1d4a-4e8b-9c6d-2f0a1b3c4d5e", budget
    assert budget["content"].startswith("| Day | Hotel | Food | Transport |")
    named = as_json(data_dir, env, "search", "replica lagging", "--mode", "lexical")["results"]
    assert "Title: Postgres replica lagging" in json.dumps(named), named  # a conversation found by its name
    hits = as_json(data_dir, env, "search", "Sintra day trip train", "--mode", "lexical")["results"]
    assert any((h.get("provenance") or {}).get("title") == "pasted text" for h in hits), hits  # its text, found

    again = as_json(data_dir, env, "import", "--from", "claude", str(CLAUDE))
    assert (again["added"], again["unchanged"]) == (0, 15)
    renamed = tmp_path / "conversations.json"  # a newer export: one conversation renamed, one message more
    data = json.loads(CLAUDE.read_text())
    data[0]["name"] = "Replica lag: fixed"
    data[0]["chat_messages"].append({"uuid": "0196a3c1-1111-7000-8000-000000000005", "sender": "assistant",
                                     "created_at": "2025-05-06T08:10:00Z", "text": "Glad it works."})
    renamed.write_text(json.dumps(data), encoding="utf-8")
    later = as_json(data_dir, env, "import", "--from", "claude", str(renamed))
    assert (later["added"], later["unchanged"]) == (1, 14), later
    assert {"where": "record 1", "why": f"the title of {REPLICA} differs from the one stored (renamed since it was "
                                       "imported): the stored title is kept"} in later["skipped"]
    turns = as_json(data_dir, env, "show", REPLICA)["turns"]
    assert (turns[0]["content"], turns[-1]["content"]) == ("Title: Postgres replica lagging", "Glad it works.")


def test_a_chatgpt_export_keeps_titles_and_string_parts_and_a_wrong_format_is_named(
        tmp_path: Path, data_dir: Path, env: dict[str, str]) -> None:
    done = as_json(data_dir, env, "import", "--from", "chatgpt", str(CHATGPT))
    assert (done["added"], len(done["skipped"])) == (12, 8), done
    sourdough = as_json(data_dir, env, "show", "chatgpt-6813a0b1-2c3d-8003-9e4f-5a6b7c8d9e0f")["turns"]
    assert [t["content"] for t in sourdough][:2] == ["Title: Sourdough starter smells like acetone",
                                                     "My starter smells like acetone after three days. Is it dead?"]
    export = tmp_path / "backup.jsonl"
    cli(data_dir, env, "export", str(export))
    wrong = cli(data_dir, env, "import", "--from", "reference", str(export), code=2)
    assert wrong.stderr.strip() == (f"memtrove: {export} looks like a memtrove export, not the MCP reference memory "
                                    f"server's memory.jsonl: run memtrove import {export}"), wrong.stderr
    folder = cli(data_dir, env, "import", str(FIXTURES / "vault"), code=2)
    assert f"run memtrove import --from markdown {FIXTURES / 'vault'}" in folder.stderr
    back = as_json(data_dir, env, "import", str(export))  # what was exported imports as it is
    assert (back["added"], back["unchanged"]) == (0, 12)
