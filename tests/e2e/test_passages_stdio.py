"""The right passage over MCP stdio (issue 43.2): a real server (SQLite, embedded Chroma, the local model)
holding a document whose answer spans two adjacent chunks returns it as ONE passage, its
``start_char``/``end_char`` exact in the artifact's text, from hybrid_search and artifact_search alike
(and with its neighbours when asked, the passage whole between the boundary markers)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow

SYLLABLES = ("ka", "lo", "mi", "re", "su", "ta", "vo", "ne", "pi", "gu", "da", "fe")
# Invented words, each used once: a sentence's words are in no other sentence of the document.
WORDS = ("".join(parts) for parts in itertools.product(SYLLABLES, repeat=3))


def paragraph() -> str:
    return " ".join(f"The {next(WORDS)} relay forwards {next(WORDS)} parcels to the {next(WORDS)} depot." for _ in range(3))


DOCUMENT = "\n\n".join(paragraph() for _ in range(60))


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def sentences(text: str, lo: int, hi: int) -> list[str]:
    """The whole sentences of ``text`` inside ``text[lo:hi]``."""
    found, start = [], 0
    for end in (i + 1 for i, c in enumerate(text) if c == "."):
        sentence = text[start:end].strip()
        if sentence and lo <= text.index(sentence, start) and end <= hi:
            found.append(sentence)
        start = end
    return found


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingClient, str, list[dict[str, Any]]]]:
    # Chunks of 120 tokens (~500 characters): two adjacent ones fit in a passage of 1,500 characters.
    env = {"CHUNK_TARGET_TOKENS": "120", "CHUNK_OVERLAP_TOKENS": "20", "MEMTROVE_CALL_BUDGET": "600",  # ingest answers when done
           "MEMTROVE_SEARCH_WEIGHTS": '{"recall": {"second_look": true}}'}  # opt-in for now (README)
    with blocking(stdio_session(tmp_path_factory.mktemp("passages") / "data", env)) as client:
        done = call(client, "artifact_ingest", artifact_type="doc", source_system="manual", source_id="relays",
                    title="Relays", content=DOCUMENT)
        view = call(client, "artifact_get", artifact_id=done["artifact_id"], include_chunks=True)
        assert len(view["chunks"]) >= 6, "test setup: a document of several chunks"
        yield client, done["artifact_id"], view["chunks"]


def test_an_answer_across_two_adjacent_chunks_comes_back_as_one_passage(stored) -> None:
    client, artifact_id, chunks = stored
    i = len(chunks) // 2
    left, right = chunks[i], chunks[i + 1]
    # The last sentence only the first chunk holds and the first sentence only the second one holds.
    before = sentences(DOCUMENT, left["start_char"], right["start_char"])[-1]
    after = sentences(DOCUMENT, left["end_char"], right["end_char"])[0]
    query = f"{before} {after}".replace("The ", "").replace(".", "")
    for tool in ("hybrid_search", "artifact_search"):
        found = call(client, tool, query=query, limit=3)
        top = found["results"][0]
        assert top["type"] == "chunk" and top["artifact_id"] == artifact_id, found
        assert "chunk_range" not in top and top["chunk_index"] in (left["chunk_index"], right["chunk_index"]), top
        assert (top["start_char"], top["end_char"]) == (left["start_char"], right["end_char"]), top
        passage = DOCUMENT[top["start_char"]:top["end_char"]]
        assert before in passage and after in passage and len(passage) <= 1_500
        assert top["snippet"].strip("…") in passage and len(top["snippet"]) <= 242  # compact: a snippet
        spans = sorted((h["start_char"], h["end_char"]) for h in found["results"] if h["type"] == "chunk")
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans  # no passage overlaps another
    text = client.call("hybrid_search", {"query": query, "limit": 1}).content[0].text
    assert f"Characters: {left['start_char']}-{right['end_char']}" in text, text
    expanded = call(client, "hybrid_search", query=query, limit=1, expand_neighbors=True)["results"][0]
    parts = expanded["content"].split("\n[CHUNK BOUNDARY]\n")
    assert parts[1] == DOCUMENT[left["start_char"]:right["end_char"]], parts


def test_the_answer_in_one_chunk_is_that_chunk(stored) -> None:
    client, artifact_id, chunks = stored
    chunk = chunks[2]
    inside = sentences(DOCUMENT, chunk["end_char"] - 10**6, chunk["end_char"])
    own = [s for s in inside if DOCUMENT.index(s) >= max(chunk["start_char"], chunks[1]["end_char"])]
    query = own[0].replace("The ", "").replace(".", "")
    top = call(client, "hybrid_search", query=query, limit=3)["results"][0]
    assert top["id"] == chunk["chunk_id"], top
    assert (top["start_char"], top["end_char"]) == (chunk["start_char"], chunk["end_char"])
