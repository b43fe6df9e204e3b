"""Least privilege for projects, over HTTP with tokens made by the real CLI: a token made without --project reaches
no project. Bob's reads nothing of Alice's documents in project ``default`` through project_search, canonical_get,
memory_restore, store_export, hybrid_search or resources/list; once `memtrove token grant` opens the project to it,
each of them finds the document (so each check below can fail); the owner's own access is unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import blocking, http_server, http_session, run_cli

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_TOOLSETS": "all"}
SHARED = "the-owners-shared-token"
MARKER = "zqdefaultspec"
QUERY = "ferry boarding"  # never the marker: an answer may echo its query
READS: dict[str, dict[str, Any]] = {
    "project_search": {"query": QUERY},
    "canonical_get": {"canonicalKey": "ferry-spec"},
    "memory_restore": {"goal": QUERY},
    "store_export": {"limit": 1000},
    "hybrid_search": {"query": QUERY, "mode": "lexical", "limit": 20},
}


def create(data: Path, *args: str) -> tuple[str, str]:
    done = run_cli(["token", "create", *args], data, ENV)
    assert done.returncode == 0, done.stderr
    found = re.search(r"token_id: (\S+)\nsecret:\s+(\S+)", done.stdout)
    assert found is not None, done.stdout
    return found.group(1), found.group(2)


def answers(client: Any) -> dict[str, str]:
    """Each read's whole answer (structured content and text), and resources/list's URIs and names."""
    found = {}
    for tool, arguments in READS.items():
        got = client.call(tool, arguments)
        found[tool] = json.dumps(got.structured_content or {}) + " ".join(getattr(c, "text", "") for c in got.content)
    listed = client.run(lambda c: c.list_resources())
    found["resources/list"] = " ".join(f"{r.uri} {r.name} {r.description}" for r in listed.resources)
    return found


def test_a_token_without_a_project_reads_nothing_of_one_until_granted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _, alice = create(data, "--user", "alice", "--project", "default")
    bob_id, bob = create(data, "--user", "bob")
    with http_server(data, ENV, token=SHARED) as server:
        with blocking(http_session(server.mcp_url, alice)) as client:
            got = client.call("canonical_upsert", {
                "canonicalKey": "ferry-spec", "docClass": "app_spec", "title": "Ferry spec",
                "contentMarkdown": f"# Ferry\n\nThe ferry spec {MARKER}: boarding closes at nine.",
                "idempotencyKey": "ferry-1"})
            assert not got.is_error, got
        with blocking(http_session(server.mcp_url, bob)) as client:
            shown = answers(client)
        assert {read: MARKER in text for read, text in shown.items()} == {read: False for read in shown}, shown
        assert "may not work in project 'default' (allowed: none" in shown["canonical_get"], shown["canonical_get"]

        granted = run_cli(["token", "grant", bob_id, "--project", "default"], data, ENV)
        assert granted.returncode == 0, granted.stderr
        for secret in (bob, SHARED):  # granted: from the next request on; the owner reaches every project
            with blocking(http_session(server.mcp_url, secret)) as client:
                shown = answers(client)
            assert {read: MARKER in text or (read == "resources/list" and "Ferry spec" in text)
                    for read, text in shown.items()} == {read: True for read in shown}, shown
