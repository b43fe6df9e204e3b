"""Another caller's ids are indistinguishable from unused ones, over HTTP with two principals (tokens made by the
CLI): conversation ids are each caller's own, so Bob's history_append into "alice-conv" (turn 0 included)
answers exactly as into an id nobody used and leaves Alice's conversation as it was; history_get, with or without
``owner``, and conversation_list show only what is Bob's or shared with him; the sessions and Zapomni toolsets,
whose ids callers choose too, answer Alice's session id and text as unused ones."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import HttpServer, blocking, http_server, http_session, run_cli

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_TOOLSETS": "all"}
VARYING = re.compile(r"art_[0-9a-f]{32}|\d{4}-\d\d-\d\dT[0-9:.]+Z|[0-9a-f]{16}")  # ids, times, hashes


def shown(answer: Any, *names: str) -> str:
    """An answer (its error flag, structured content and text) with ids, times and ``names`` made alike."""
    text = json.dumps([answer.is_error, answer.structured_content, [getattr(c, "text", "") for c in answer.content]],
                      sort_keys=True)
    for name in names:
        text = text.replace(name, "NAME")
    return VARYING.sub("X", text)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, dict[str, str]]]:
    data = tmp_path_factory.mktemp("history-scoping") / "data"
    secrets = {}
    for user in ("alice", "bob"):
        made = run_cli(["token", "create", "--user", user, "--team", "eng"], data, ENV)
        assert made.returncode == 0, made.stderr
        secrets[user] = re.search(r"secret:\s+(\S+)", made.stdout).group(1)  # type: ignore[union-attr]
    with http_server(data, ENV, token="the-owners-shared-token") as server:
        with blocking(http_session(server.mcp_url, secrets["alice"])) as alice:
            for conversation, index, content, visibility in (
                    ("alice-conv", 0, "Alice's zqprivate plan for the offsite.", "me"),
                    ("alice-conv", 1, "Alice booked the team dinner.", "team"),
                    ("alice-private", 0, "Alice's zqsecret diary.", "me")):
                got = alice.call("history_append", {"conversation_id": conversation, "role": "user", "content": content,
                                                    "turn_index": index, "visibility_scope": visibility})
                assert not got.is_error, got
            assert not alice.call("store_session_context", {"session_id": "alice-s", "session_iter": "v1",
                                                            "content": "# Plan\n\nAlice's zqsession plan."}).is_error
            assert not alice.call("add_memory", {"text": "Alice remembers the zqlighthouse."}).is_error
        yield server, secrets


def alices_turns(server: HttpServer, secrets: dict[str, str]) -> list[Any]:
    with blocking(http_session(server.mcp_url, secrets["alice"])) as alice:
        return [alice.call("history_get", {"conversation_id": c}).structured_content["turns"]
                for c in ("alice-conv", "alice-private")]


def test_bobs_appends_into_alices_conversation_id_answer_as_into_an_unused_one(world) -> None:
    server, secrets = world
    before = alices_turns(server, secrets)
    with blocking(http_session(server.mcp_url, secrets["bob"])) as bob:
        for index in (0, 1, 7):
            taken, unused = (bob.call("history_append", {"conversation_id": c, "role": "user", "turn_index": index,
                                                         "content": f"Bob's turn {index}."})
                             for c in ("alice-conv", f"unused-conv-{index}"))
            assert not taken.is_error and taken.structured_content["status"] == "appended", taken
            assert shown(taken, "alice-conv", f"unused-conv-{index}") == shown(unused, "alice-conv",
                                                                               f"unused-conv-{index}")
        again = bob.call("history_append", {"conversation_id": "alice-conv", "role": "user", "turn_index": 0,
                                            "content": "Bob's turn 0."})
        assert again.structured_content["status"] == "unchanged"  # his own turn 0, not alice's
        own = bob.call("history_get", {"conversation_id": "alice-conv"}).structured_content["turns"]
        assert [t["content"] for t in own] == ["Bob's turn 0.", "Bob's turn 1.", "Bob's turn 7."]
    assert alices_turns(server, secrets) == before  # untouched, ids and times too
    assert [t["content"] for t in before[0]] == ["Alice's zqprivate plan for the offsite.",
                                                 "Alice booked the team dinner."]


def test_bob_reads_of_alices_conversations_only_what_she_shares(world) -> None:
    server, secrets = world
    with blocking(http_session(server.mcp_url, secrets["bob"])) as bob:
        shared = bob.call("history_get", {"conversation_id": "alice-conv", "owner": "alice"})
        assert [t["content"] for t in shared.structured_content["turns"]] == ["Alice booked the team dinner."]
        for owner, conversation in (("alice", "alice-private"), ("alice", "never-used"), ("carol", "alice-conv")):
            hidden = bob.call("history_get", {"conversation_id": conversation, "owner": owner})
            nothing = bob.call("history_get", {"conversation_id": "nobody-ever", "owner": "nobody"})
            assert shown(hidden, conversation, owner) == shown(nothing, "nobody-ever", "nobody"), hidden
        listed = bob.call("conversation_list", {"limit": 100}).structured_content["results"]
        rows = {(r["conversation_id"], r["owner"]): r["turns"] for r in listed}
        assert rows[("alice-conv", "alice")] == 1 and ("alice-private", "alice") not in rows
        assert "zqprivate" not in json.dumps(listed) and "zqsecret" not in json.dumps(listed)
        bad = bob.call("history_get", {"conversation_id": "alice-conv", "owner": "not a user"})
        assert bad.is_error and bad.structured_content["error"]["field"] == "owner"


def test_alices_session_id_and_text_answer_bob_as_unused_ones(world) -> None:
    server, secrets = world
    with blocking(http_session(server.mcp_url, secrets["bob"])) as bob:
        for tool, arguments in (("search_session_context", {}), ("search_input_prompts", {}),
                                ("get_session_stats", {}), ("search_system_memory", {}),
                                ("load_session_context_for_task", {"session_iter": "v1"}),
                                ("store_session_context", {"session_iter": "v1",
                                                           "content": "# Plan\n\nAlice's zqsession plan."})):
            taken, unused = (bob.call(tool, {"session_id": s, **arguments}) for s in ("alice-s", f"never-{tool}"))
            assert shown(taken, "alice-s", f"never-{tool}") == shown(unused, "alice-s", f"never-{tool}"), tool
            assert "zqsession" not in shown(taken) or tool == "store_session_context"
        same, other = (bob.call("add_memory", {"text": t}) for t in ("Alice remembers the zqlighthouse.",
                                                                     "Bob remembers the zqferryboat."))
        assert not same.is_error and same.structured_content["duplicate"] is False
        assert shown(same, "Alice remembers the zqlighthouse.") == shown(other, "Bob remembers the zqferryboat.")
