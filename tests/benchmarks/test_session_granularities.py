"""Spec 001's granularities on a real Markdown corpus: FINE and MEDIUM section recall@5, store/search p50.

Corpus: Python's library documentation (Debian's python3-doc; reST titles turned into Markdown
headings, as tests/benchmarks/test_markdown_retrieval.py does). Each document is stored with
store_knowledge_base over MCP (in-process client, real SQLite, Chroma and local model). For every
section with enough prose, its first sentence is the question; its answer is the section. FINE
scores when one of its first five chunks lies in that section; MEDIUM when one of its first five
sections is the answer's H1 > H2 section (the granularity it groups by). The reference, measured
in the same run on the same documents: core's artifact_ingest and hybrid_search (limit 5).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime
from tests.benchmarks.conftest import FULL
from tests.benchmarks.test_markdown_retrieval import FILES, SOURCES, Section, rst_to_markdown, sections

QUESTIONS_PER_DOC = 12  # spread over each document's sections


def picked(secs: list[Section]) -> list[Section]:
    step = max(1, len(secs) // QUESTIONS_PER_DOC)
    return secs[::step][:QUESTIONS_PER_DOC]


async def measure(tmp: Path, docs: dict[str, str]) -> dict[str, Any]:
    from mcp.client import Client

    # The call waits for its ingest whatever the load (a busy machine took the 20 s budget and found nothing).
    runtime = Runtime(Settings(memtrove_data_dir=tmp, memtrove_warmup=False, memtrove_call_budget=3600))
    runtime.start()
    runtime.ensure_ready()
    try:
        async with Client(build_server(runtime, ["core", "sessions"])) as client:
            async def call(tool: str, **arguments: Any) -> dict[str, Any]:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.structured_content
                return result.structured_content

            memory_of: dict[str, str] = {}
            store_ms: list[float] = []
            for name, text in docs.items():
                started = time.perf_counter()
                stored = await call("store_knowledge_base", agent_id="docs", title=name, content=text,
                                    category="python")
                store_ms.append((time.perf_counter() - started) * 1000)
                memory_of[stored["memory_id"]] = name
            secs = {n: sections(n, t) for n, t in docs.items()}
            questions = [(s.first_sentence, s) for n in docs for s in picked(secs[n])]
            fine_hits, medium_hits, fine_ms, medium_ms = [], [], [], []
            for query, answer in questions:
                started = time.perf_counter()
                fine = await call("search_knowledge_base_specific_chunks", query=query, limit=5)
                fine_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                medium = await call("search_knowledge_base_section_context", query=query, limit=5)
                medium_ms.append((time.perf_counter() - started) * 1000)
                fine_hits.append(any(memory_of.get(r["memory_id"]) == answer.doc and
                                     r["header_path"].endswith(f" {answer.path[-1]}") for r in fine["results"]))
                key = " > ".join(f"{'#' * (i + 1)} {t}" for i, t in enumerate(answer.path[:2]))
                medium_hits.append(any(memory_of.get(r["memory_id"]) == answer.doc and r["section_header"] == key
                                       for r in medium["results"]))
            # The reference: the same documents through core's tools, after the questions above.
            ingest_ms, hybrid_ms = [], []
            for name, text in docs.items():
                started = time.perf_counter()
                await call("artifact_ingest", artifact_type="doc", source_system="python-docs", source_id=name,
                           title=name, content=text, chunker="markdown")
                ingest_ms.append((time.perf_counter() - started) * 1000)
            for query, _ in questions:
                started = time.perf_counter()
                await call("hybrid_search", query=query[:500], limit=5, filters={"source_system": "python-docs"})
                hybrid_ms.append((time.perf_counter() - started) * 1000)
    finally:
        runtime.shutdown()
    return {"documents": len(docs), "questions": len(questions),
            "fine_section_recall@5": round(statistics.fmean(fine_hits), 3),
            "medium_section_recall@5": round(statistics.fmean(medium_hits), 3),
            "store_p50_ms": round(statistics.median(store_ms), 1),
            "fine_p50_ms": round(statistics.median(fine_ms), 1),
            "medium_p50_ms": round(statistics.median(medium_ms), 1),
            "reference_artifact_ingest_p50_ms": round(statistics.median(ingest_ms), 1),
            "reference_hybrid_search_p50_ms": round(statistics.median(hybrid_ms), 1),
            "store_to_ingest_ratio": round(statistics.median(store_ms) / statistics.median(ingest_ms), 2),
            "fine_to_hybrid_ratio": round(statistics.median(fine_ms) / statistics.median(hybrid_ms), 2),
            "medium_to_hybrid_ratio": round(statistics.median(medium_ms) / statistics.median(hybrid_ms), 2)}


@pytest.mark.slow
def test_fine_and_medium_find_the_section(report, tmp_path: Path) -> None:
    if not SOURCES.exists():
        pytest.skip("Debian's python3-doc is not installed (apt-get install python3-doc): no corpus")
    names = [n for n in (FILES if FULL else FILES[:1]) if (SOURCES / f"{n}.rst.txt").exists()]
    docs = {n: rst_to_markdown((SOURCES / f"{n}.rst.txt").read_text(encoding="utf-8")) for n in names}
    figures = asyncio.run(measure(tmp_path, docs))
    report(**figures)
    # A first sentence names its passage: most questions find their section at both granularities.
    assert figures["fine_section_recall@5"] >= 0.5, figures
    assert figures["medium_section_recall@5"] >= 0.5, figures
