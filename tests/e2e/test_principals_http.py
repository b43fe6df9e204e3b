"""Callers over HTTP, each with its own token (made by the real CLI), see only what they may: their own
items, their team's, their org's, what was opened to them, up to their clearance; a revoked token is
refused at once; an expired item is never returned. (The randomized leak check over every read tool of
every toolset is tests/e2e/test_leaks_http.py.)"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.mcp_procs import blocking, http_server, http_session, run_cli

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_LOCAL_CLEARANCE": "highly_sensitive"}
# who: (teams, org, clearance)
PEOPLE = {"alice": (["eng"], "acme", "sensitive"), "bob": (["eng"], "acme", "normal"),
          "carol": (["ops"], "acme", "highly_sensitive")}


def create_token(data: Path, user: str) -> tuple[str, str]:
    teams, org, clearance = PEOPLE[user]
    args = ["token", "create", "--user", user, "--org", org, "--clearance", clearance]
    for team in teams:
        args += ["--team", team]
    done = run_cli(args, data, ENV)
    assert done.returncode == 0, done.stderr
    token_id = re.search(r"token_id: (\S+)", done.stdout).group(1)  # type: ignore[union-attr]
    return token_id, re.search(r"secret:\s+(\S+)", done.stdout).group(1)  # type: ignore[union-attr]


def may_see(reader: str, writer: str, visibility: str, sensitivity: str, visible_to: list[str]) -> bool:
    teams, org, clearance = PEOPLE[reader]
    order = ["normal", "sensitive", "highly_sensitive"]
    if order.index(sensitivity) > order.index(clearance):
        return False
    return (reader == writer or (visibility == "team" and set(teams) & set(PEOPLE[writer][0]))
            or (visibility == "org" and org == PEOPLE[writer][1])
            or (visibility == "custom" and (reader in visible_to or any(f"team:{t}" in visible_to for t in teams))))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("principals") / "data"
    tokens = {user: create_token(data, user) for user in PEOPLE}
    with http_server(data, ENV, token="the-owners-shared-token") as server:
        items: list[dict[str, Any]] = []
        for writer in PEOPLE:
            with blocking(http_session(server.mcp_url, tokens[writer][1])) as client:
                n = 0
                for visibility in ("me", "team", "org", "custom"):
                    for sensitivity in ("normal", "sensitive", "highly_sensitive"):
                        n += 1
                        visible_to = ["carol"] if visibility == "custom" else []
                        word = f"zq{writer}{visibility}{sensitivity.replace('_', '')}"
                        got = client.call("artifact_ingest", {
                            "artifact_type": "note", "source_system": "wiki", "source_id": f"{writer}-{n}",
                            "content": f"Lighthouse keeper notes {word}: the lamp was serviced.",
                            "sensitivity": sensitivity, "visibility_scope": visibility, "visible_to": visible_to})
                        if visibility == "me" and not may_see(writer, writer, visibility, sensitivity, []):
                            # Nobody could read it (only its writer, who is not cleared): refused, not stored.
                            assert got.is_error and got.structured_content["error"]["field"] == "sensitivity", got
                            continue
                        assert not got.is_error, got
                        items.append({"id": got.structured_content["artifact_id"], "writer": writer, "word": word,
                                      "visibility": visibility, "sensitivity": sensitivity, "visible_to": visible_to})
        yield {"server": server, "tokens": tokens, "items": items, "data": data}


def allowed(reader: str, item: dict[str, Any]) -> bool:
    return may_see(reader, item["writer"], item["visibility"], item["sensitivity"], item["visible_to"])


def test_each_caller_finds_exactly_what_it_may_see(world: dict[str, Any]) -> None:
    for reader in PEOPLE:
        with blocking(http_session(world["server"].mcp_url, world["tokens"][reader][1])) as client:
            got = client.call("hybrid_search", {"query": "lighthouse keeper lamp serviced", "limit": 50,
                                                "mode": "lexical"})
            found = {h["artifact_id"] for h in got.structured_content["results"]}
            expected = {i["id"] for i in world["items"] if allowed(reader, i)}
            assert found == expected, (reader, sorted(found ^ expected))
            for item in world["items"]:
                one = client.call("artifact_get", {"artifact_id": item["id"]})
                assert one.is_error != allowed(reader, item), (reader, item)
                if one.is_error:
                    assert "not found" in one.content[0].text  # the same answer as for nothing at all


def test_a_revoked_token_is_refused_at_once(world: dict[str, Any], tmp_path: Path) -> None:
    token_id, secret = create_token(world["data"], "bob")
    url = world["server"].mcp_url
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Authorization": f"Bearer {secret}", "Accept": "application/json, text/event-stream"}
    assert httpx.post(url, json=body, headers=headers, timeout=30).status_code != 401
    assert run_cli(["token", "revoke", token_id], world["data"], ENV).returncode == 0
    assert httpx.post(url, json=body, headers=headers, timeout=30).status_code == 401
    assert httpx.post(url, json=body, headers={"Accept": headers["Accept"]}, timeout=30).status_code == 401
    listed = run_cli(["token", "list", "--json"], world["data"], ENV).stdout
    assert secret not in listed and f'"token_id": "{token_id}"' in listed


def test_an_expired_item_is_never_returned(world: dict[str, Any]) -> None:
    with blocking(http_session(world["server"].mcp_url, world["tokens"]["alice"][1])) as client:
        gone = client.call("artifact_ingest", {"artifact_type": "note", "source_system": "wiki", "source_id": "gone",
                                               "content": "Zqexpired ferry timetable of 2020.",
                                               "ts": "2020-01-01T00:00:00Z", "retention_policy": "1y"})
        assert gone.is_error and gone.structured_content["error"]["field"] == "ts"  # expired before written
        # A day's retention from a ts a day (less 4 s) ago: readable when written, expired 4 s later.
        almost = datetime.now(timezone.utc) - timedelta(days=1) + timedelta(seconds=4)
        old = client.call("artifact_ingest", {"artifact_type": "note", "source_system": "wiki", "source_id": "old",
                                              "content": "Zqexpired ferry timetable of yesterday.",
                                              "ts": almost.isoformat(), "retention_policy": "custom",
                                              "retention_days": 1})
        fresh = client.call("artifact_ingest", {"artifact_type": "note", "source_system": "wiki", "source_id": "new",
                                                "content": "Zqexpired ferry timetable of next year.",
                                                "retention_policy": "1y"})
        assert not old.is_error and not fresh.is_error
        expires = datetime.fromisoformat(old.structured_content["expires_at"].replace("Z", "+00:00"))
        assert abs((expires - (almost + timedelta(days=1))).total_seconds()) <= 1  # the answer says when
        time.sleep(max(0.0, (almost + timedelta(days=1) - datetime.now(timezone.utc)).total_seconds()) + 0.5)
        assert client.call("artifact_get", {"artifact_id": old.structured_content["artifact_id"]}).is_error
        hits = client.call("hybrid_search", {"query": "zqexpired ferry timetable", "limit": 10,
                                             "mode": "lexical"}).structured_content
        assert [h["artifact_id"] for h in hits["results"]] == [fresh.structured_content["artifact_id"]]
