"""Finding the right thing in a mixed store, over MCP stdio (issue 43.1): real documents (Python's own
documentation, a few hundred KB), five memories and a conversation in one data dir, searched with
everything included. Word scores compare across collections (one idf over all of them), so the record
holding a query's rarest words is not buried under document chunks that share its common words: the CI
runners' memory in the top 3 by its words too (it was 11th, by meaning alone), the only record holding
"heronpond" first (7th), the turn said verbatim in the top 3 (6th, behind logging-cookbook chunks). And a
new user's first memory, or first two, is found by its words (an idf of zero left it to meaning alone),
through memory_search, hybrid_search, ``memtrove search`` and the page's search."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.mcp_procs import BlockingClient, blocking, http_server, run_cli, stdio_session

pytestmark = pytest.mark.slow

DOCS = Path("/usr/share/doc/python3.11/html/_sources")
# About 250 KB: the logging cookbook (the chunks that buried the turn), the FAQ on the library, argparse,
# sockets and the general FAQ.
FILES = ["howto/logging-cookbook", "faq/library", "howto/argparse", "howto/sockets", "faq/general"]
MEMORIES = ["The CI runners are on Hetzner machines.",
            "The heronpond staging database is restored every Sunday night.",
            "Alice prefers tabs over spaces.",
            "The release train leaves every second Thursday.",
            "Deploys need a green build on main."]
TURNS = ["can you look at the deploy", "my pod keeps restarting with exit code 137", "sounds like the OOM killer",
         "let us raise the memory limit", "thanks, that fixed it"]
HERONPOND = MEMORIES[1]
SAID = "staging database is restored every Sunday night"  # as the page shows it (query words are marked)


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    if not all((DOCS / f"{name}.rst.txt").is_file() for name in FILES):
        pytest.skip(f"needs Python's documentation sources in {DOCS} (Debian: python3-doc; ./scripts/test installs it)")
    with blocking(stdio_session(tmp_path_factory.mktemp("mixed") / "data", {})) as client:
        for name in FILES:
            call(client, "artifact_ingest", artifact_type="doc", source_system="manual", title=Path(name).name,
                 content=(DOCS / f"{name}.rst.txt").read_text(encoding="utf-8"), source_id=name)
        for content in MEMORIES:
            call(client, "memory_store", content=content, type="fact", confidence=0.9)
        for index, content in enumerate(TURNS):
            call(client, "history_append", conversation_id="ops", role=("user", "assistant")[index % 2],
                 content=content, turn_index=index)
        yield client


def everything(client: BlockingClient, query: str) -> list[dict[str, Any]]:
    found = call(client, "hybrid_search", query=query, include_memory=True, include_history=True, limit=10)
    assert any(h["type"] == "chunk" for h in found["results"]), found  # the documents are searched alongside
    return found["results"]


def rank_of(results: list[dict[str, Any]], content: str) -> tuple[int, dict[str, Any]]:
    for rank, hit in enumerate(results, 1):
        if text_of(hit) == content:
            return rank, hit
    raise AssertionError(f"{content!r} not in {[(h['type'], text_of(h)[:40]) for h in results]}")


def text_of(hit: dict[str, Any]) -> str:
    """What a hit shows: its whole text when it is short (a memory's, a turn's), else a snippet."""
    return hit.get("content") or hit.get("snippet") or ""


def test_the_ci_runners_memory_is_found_by_its_words_among_documents(mixed: BlockingClient) -> None:
    rank, hit = rank_of(everything(mixed, "where do the CI runners run"), MEMORIES[0])
    # It holds the query's rarest words ("ci", "runners"): first by words, above chunks that "run" often.
    assert rank <= 3 and hit["signals"].get("lexical") == 1, (rank, hit["signals"])


def test_the_only_record_holding_a_rare_word_ranks_first(mixed: BlockingClient) -> None:
    rank, hit = rank_of(everything(mixed, "heronpond staging database"), HERONPOND)
    assert rank == 1 and hit["signals"].get("lexical") == 1, (rank, hit["signals"])


@pytest.mark.parametrize("query", ["my pod keeps restarting with exit code 137", "exit code 137"])
def test_the_turn_said_verbatim_is_above_the_logging_cookbook(mixed: BlockingClient, query: str) -> None:
    rank, hit = rank_of(everything(mixed, query), TURNS[1])
    assert rank <= 3 and "lexical" in hit["signals"], (rank, hit["signals"])


def test_a_first_memory_and_a_second_are_found_by_their_words(tmp_path: Path) -> None:
    """A store of one memory, then of two: the unique word is lexical evidence (FTS5's idf gave it none)."""
    data = tmp_path / "data"
    with blocking(stdio_session(data, {})) as client:
        for count, content in enumerate([HERONPOND, MEMORIES[3]], 1):
            call(client, "memory_store", content=content, type="fact", confidence=0.9)
            found = call(client, "memory_search", query="heronpond", limit=5)["results"]
            assert text_of(found[0]) == HERONPOND and "lexical" in found[0]["signals"], (count, found[0])
            hybrid = call(client, "hybrid_search", query="heronpond", include_memory=True, limit=5)["results"]
            assert text_of(hybrid[0]) == HERONPOND and "lexical" in hybrid[0]["signals"], (count, hybrid[0])
    searched = run_cli(["search", "heronpond", "--json"], data, {}, timeout=180)
    assert searched.returncode == 0, searched.stderr
    assert HERONPOND in searched.stdout and '"lexical"' in searched.stdout
    with http_server(data, {}) as server:  # the page's search: memories included unless the form says not
        page = httpx.get(f"{server.base_url}/ui/search", params={"q": "heronpond"}, timeout=120)
        assert page.status_code == 200 and SAID in html.unescape(page.text), page.text[-2000:]
        unticked = httpx.get(f"{server.base_url}/ui/search", timeout=120,
                             params=[("q", "heronpond"), ("memory", "off"), ("history", "off")])
        assert unticked.status_code == 200 and SAID not in html.unescape(unticked.text)
