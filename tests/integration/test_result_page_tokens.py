"""What a model reads per result page: a page of 5 hits stays within ~1,500 cl100k tokens.

Real documents (Python's library docs, as python3-doc installs them) and short facts go through the
real container (embedded Chroma, SQLite, the local model) and the MCP tools in-process. The text
rendering and the structured content are counted separately (a client shows the model one or the
other, or both), the structured content as the JSON on the wire (compact, as the SDK sends it).
Token counts are deterministic: every ingest completes within its call.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from adapters.text.tokenizers import cl100k_encoding
from config.settings import Settings
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime

DOCS = Path("/usr/share/doc/python3.11/html/_sources/library")
FILES = ("json", "csv", "heapq", "bisect", "textwrap", "secrets", "functools")
PAGE_BUDGET = 1_500  # tokens for a page of 5 hits, in each representation
MEMORY_PAGE_BUDGET = 2_000  # a page of 5 memories, those read whole included (domain/search WHOLE_PAGE_TOKENS)

# Paraphrased: what a user would ask, not the documents' own sentences.
DOC_QUERIES = (
    "keep a list in order while adding new items",
    "make an unguessable token for a password reset link",
    "break long paragraphs into lines of a fixed width",
    "read a spreadsheet exported with semicolons between fields",
    "remember the results of an expensive function call",
    "turn Python objects into a string to send over the network",
    "smallest few items of a large collection without sorting it all",
)
FACTS = (
    "[8 May 2023] Caroline went to an LGBTQ support group and found it powerful.",
    "[8 May 2023] Melanie is planning to run a charity race for mental health.",
    "[25 May 2023] Caroline is researching adoption agencies to build a family.",
    "[9 June 2023] Melanie painted a lake sunrise last year and still loves it.",
    "[9 June 2023] Caroline's grandma gave her a necklace from Sweden.",
    "[27 June 2023] Melanie took her kids camping at the beach.",
    "[3 July 2023] Caroline is allergic to peanuts and carries an epinephrine pen.",
    "[3 July 2023] Melanie plays the clarinet in a community band.",
    "[15 July 2023] Caroline wants to study counseling and mental health.",
    "[15 July 2023] Melanie's favourite book as a child was Charlotte's Web.",
    "[2 Aug 2023] The user prefers dark mode in every editor.",
    "[2 Aug 2023] Deploys go out on Tuesdays after the standup.",
)
FACT_QUERIES = ("Does Caroline have any food allergies?", "What instrument does Melanie play?",
                "When do deploys happen?", "What did Caroline's grandmother give her?")


LONG_TOPICS = ("payments rollback", "database failover", "certificate rotation", "search index rebuild",
               "backup restore drill", "incident paging rota")


def long_memory(topic: str) -> str:
    """A runbook of 330-380 cl100k tokens: longer than a snippet, short enough to read whole."""
    steps = " ".join(f"Step {i} of the {topic}: check the {topic} dashboard, confirm with the on-call engineer, "
                     f"and write the outcome in the {topic} log before going on." for i in range(1, 10))
    return f"Runbook for the {topic}. {steps}"


def tokens(text: str) -> int:
    return len(cl100k_encoding().encode_ordinary(text))


def page_tokens(result: Any) -> tuple[int, int]:
    """(text rendering, structured content as compact JSON) tokens of one tool result."""
    text = "".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    return tokens(text), tokens(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":")))


async def measure(data_dir: Path) -> dict[str, list[tuple[int, int]]]:
    from mcp.client import Client

    runtime = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False, memtrove_call_budget=3_600))
    runtime.start()
    try:
        async with Client(build_server(runtime)) as client:
            for name in FILES:
                done = await client.call_tool("artifact_ingest", {
                    "artifact_type": "doc", "source_system": "python-docs", "source_id": name,
                    "title": f"{name} (Python 3.11 library reference)",
                    "source_url": f"https://docs.python.org/3.11/library/{name}.html",
                    "content": (DOCS / f"{name}.rst.txt").read_text(encoding="utf-8")})
                assert not done.is_error and done.structured_content["status"] == "ingested", done
            for fact in FACTS:
                stored = await client.call_tool("memory_store", {"content": fact, "type": "fact", "confidence": 0.9})
                assert not stored.is_error, stored
            pages: dict[str, list[tuple[int, int]]] = {"hybrid_search": [], "memory_search": []}
            for query in DOC_QUERIES:
                found = await client.call_tool("hybrid_search", {"query": query, "limit": 5})
                assert not found.is_error and found.structured_content["count"] >= 1, found
                if found.structured_content["count"] == 5:  # a full page (a relevance floor may cut one short)
                    pages["hybrid_search"].append(page_tokens(found))
            for query in FACT_QUERIES:
                found = await client.call_tool("memory_search", {"query": query, "limit": 5})
                assert not found.is_error and found.structured_content["count"] >= 1, found
                pages["memory_search"].append(page_tokens(found))
            return pages
    finally:
        runtime.shutdown()


async def measure_long_memories(data_dir: Path) -> dict[str, list[tuple[int, int]]]:
    """Pages of memory_search over long memories only (330-380 tokens each: longer than a snippet, short
    enough to read whole), which a page reads whole, best first, while its budget lasts."""
    from mcp.client import Client

    runtime = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False))
    runtime.start()
    try:
        async with Client(build_server(runtime)) as client:
            for topic in LONG_TOPICS:
                stored = await client.call_tool("memory_store", {"content": long_memory(topic), "type": "project",
                                                                 "confidence": 0.9})
                assert not stored.is_error, stored
            pages: dict[str, list[tuple[int, int]]] = {"long_memories": []}
            for topic in LONG_TOPICS:
                query = f"{topic}: check the dashboard and confirm with the on-call engineer"  # words all share
                found = await client.call_tool("memory_search", {"query": query, "limit": 5})
                results = found.structured_content["results"]
                assert not found.is_error and len(results) == 5 and results[0].get("content"), found
                assert sum("content" in r for r in results) >= 2 and any(r.get("truncated") for r in results)
                pages["long_memories"].append(page_tokens(found))
            return pages
    finally:
        runtime.shutdown()


@pytest.fixture(scope="module")
def long_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, int]]]:
    return asyncio.run(measure_long_memories(tmp_path_factory.mktemp("long-memories")))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, int]]]:
    if not (DOCS / "json.rst.txt").exists():
        pytest.skip("python3-doc is not installed")
    return asyncio.run(measure(tmp_path_factory.mktemp("tokens")))


def report(pages: dict[str, list[tuple[int, int]]]) -> str:
    return "; ".join(f"{tool}: text max {max(t for t, _ in p)} mean {sum(t for t, _ in p) / len(p):.0f}, "
                     f"structured max {max(s for _, s in p)} mean {sum(s for _, s in p) / len(p):.0f}"
                     for tool, p in pages.items())


def test_a_page_of_five_document_hits_fits_the_budget(pages: dict[str, list[tuple[int, int]]]) -> None:
    print(report(pages))
    assert len(pages["hybrid_search"]) >= len(DOC_QUERIES) // 2, "too few full pages to measure"
    for text, structured in pages["hybrid_search"]:
        assert text <= PAGE_BUDGET and structured <= PAGE_BUDGET, report(pages)


def test_a_page_of_long_memories_reads_its_best_whole_and_fits_its_budget(
        long_pages: dict[str, list[tuple[int, int]]]) -> None:
    print(report(long_pages))
    assert all(300 <= tokens(long_memory(topic)) <= 400 for topic in LONG_TOPICS)
    for text, structured in long_pages["long_memories"]:
        assert text <= MEMORY_PAGE_BUDGET and structured <= MEMORY_PAGE_BUDGET, report(long_pages)


def test_a_page_of_memories_is_small(pages: dict[str, list[tuple[int, int]]]) -> None:
    # Short facts: the page is mostly metadata, so it must stay well under the documents' budget.
    for text, structured in pages["memory_search"]:
        assert text <= PAGE_BUDGET // 3 and structured <= PAGE_BUDGET // 2, report(pages)
