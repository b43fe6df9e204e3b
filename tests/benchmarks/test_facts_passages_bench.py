"""Facts and passages through MCP stdio (memtrove-bench facts / passages), with their baselines in the same run.

Full size (./scripts/bench): all five LoCoMo conversations' observations as memories, and the
whole Python-docs question set (90 documents, 100 questions), asserting issue 10's targets: facts
recall@10 >= 0.70; passages hit@5 >= 0.90 and MRR@10 >= 0.70. Smoke size: one conversation, and
the questions of four documents. Either way memtrove's hybrid must not fall below words alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from bench import facts, passages
from bench.turns import load
from tests.benchmarks.conftest import FULL

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = Path(os.environ.get("MEMTROVE_LOCOMO_DIR", ROOT.parent / "shared" / "locomo"))

pytestmark = pytest.mark.slow


def test_facts_recall(benchmark, report, tmp_path: Path) -> None:
    conversations = load(LOCOMO, [] if FULL else ["conv-30"])
    if not conversations:
        pytest.skip(f"LoCoMo conversations not found in {LOCOMO} (set MEMTROVE_LOCOMO_DIR)")
    configs = facts.CONFIGS if FULL else {n: facts.CONFIGS[n] for n in ("memtrove hybrid", "BM25 alone")}
    result = anyio.run(lambda: facts.run(conversations, configs, tmp_path))
    if not benchmark.disabled:
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)  # figures ride on extra_info
    print("\n" + facts.table(result))
    (tmp_path / "facts.json").write_text(json.dumps(result, indent=2))
    report(**{name: {k: r[k] for k in ("recall@1", "recall@5", "recall@10", "recall@20", "latency_ms")}
              for name, r in result["results"].items()}, ceiling=result["evidence_with_a_fact"])
    hybrid, bm25 = result["results"]["memtrove hybrid"], result["results"]["BM25 alone"]
    assert result["facts"] > 100 and hybrid["questions"] > 50
    assert hybrid["recall@10"] >= bm25["recall@10"] - 0.02, (hybrid, bm25)
    if FULL:
        assert hybrid["recall@10"] >= 0.70, hybrid


def test_passages_in_long_documents(benchmark, report, tmp_path: Path) -> None:
    if not passages.DOCS.is_dir():
        pytest.skip("Debian's python3-doc is not installed (apt-get install python3-doc): no corpus")
    corpus, questions = passages.load_questions(passages.QUESTIONS)
    if not FULL:  # four documents of 15-30 KB (~90 KB in all), with their questions
        kept = [d for d in dict.fromkeys(q.doc for q in questions)
                if 15_000 <= (passages.DOCS / d).stat().st_size <= 30_000][:4]
        corpus, questions = kept, [q for q in questions if q.doc in kept]
    configs = passages.CONFIGS if FULL else {n: passages.CONFIGS[n] for n in ("memtrove hybrid", "BM25 alone")}
    result = anyio.run(lambda: passages.run(corpus, questions, passages.DOCS, configs, tmp_path))
    if not benchmark.disabled:
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    print("\n" + passages.table(result))
    (tmp_path / "passages.json").write_text(json.dumps(result, indent=2))
    report(**{name: {k: r[k] for k in ("hit@1", "hit@5", "hit@10", "mrr@10", "document@5", "latency_ms")}
              for name, r in result["results"].items()})
    hybrid, bm25 = result["results"]["memtrove hybrid"], result["results"]["BM25 alone"]
    assert result["chunks"] > len(corpus) and hybrid["questions"] == len(questions)
    assert hybrid["hit@10"] >= bm25["hit@10"] and hybrid["mrr@10"] >= bm25["mrr@10"] - 0.05, (hybrid, bm25)
    if FULL:
        assert hybrid["hit@5"] >= 0.90 and hybrid["mrr@10"] >= 0.70, hybrid
