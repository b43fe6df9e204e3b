"""A mixed store through MCP stdio (memtrove-bench mixed, issue 43): conversations, their facts and real
documents in one store against each collection alone, in the same run.

Full size (./scripts/bench): the five LoCoMo development conversations (turns and facts) and 400 KB of
Python's library documentation with their questions. Smoke size: the first 150 turns of one
conversation, the facts of those sessions and three small documents. Either way the four stores are
built and asked, every record is where it was put, and mixing does not lose what a collection alone
finds (the ratios are reported; the issue's 0.97 is asserted at full size on what an agent sees, a turn
or a fact). No time is asserted.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from bench import mixed, passages
from bench.turns import load
from tests.benchmarks.conftest import FULL

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = Path(os.environ.get("MEMTROVE_LOCOMO_DIR", ROOT.parent / "shared" / "locomo"))
SMOKE_TURNS = 150
OBSERVATION = re.compile(r"session_(\d+)_observation")

pytestmark = pytest.mark.slow


def smoke_corpus() -> mixed.Corpus:
    conv = load(LOCOMO, ["conv-30"])[0]
    kept = conv.turns[:SMOKE_TURNS]
    last = max(int(dia_id[1:].split(":")[0]) for dia_id, _, _ in kept)
    data = {k: v for k, v in conv.data.items() if not (m := OBSERVATION.fullmatch(k)) or int(m.group(1)) <= last}
    ids = {dia_id for dia_id, _, _ in kept}
    conv = replace(conv, turns=kept, data=data, questions=tuple(q for q in conv.questions if set(q.evidence) <= ids))
    _, questions = passages.load_questions(passages.QUESTIONS)
    small = [d for d in dict.fromkeys(q.doc for q in questions) if (passages.DOCS / d).stat().st_size <= 12_000][:3]
    return mixed.Corpus([conv], {d: (passages.DOCS / d).read_text(encoding="utf-8") for d in small},
                        [q for q in questions if q.doc in small])


def test_a_mixed_store_against_each_collection_alone(benchmark, report, tmp_path: Path) -> None:
    if not sorted(LOCOMO.glob("conv-*.json")):
        pytest.skip(f"LoCoMo conversations not found in {LOCOMO} (set MEMTROVE_LOCOMO_DIR)")
    if not passages.DOCS.is_dir():
        pytest.skip("Debian's python3-doc is not installed (apt-get install python3-doc): no documents")
    corpus = mixed.corpus(LOCOMO, [], passages.QUESTIONS, passages.DOCS) if FULL else smoke_corpus()
    result = anyio.run(lambda: mixed.run(corpus, tmp_path))
    if not benchmark.disabled:
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)  # figures ride on extra_info
    print("\n" + mixed.table(result))
    (tmp_path / "mixed.json").write_text(json.dumps(result, indent=2))
    r = result["results"]
    report(turns=r["turns"], facts=r["facts"], either=r["turn or fact"], passages=r["passages"])
    records = result["records"]
    assert records["mixed"]["turns"] == records["turns"]["turns"] == sum(len(c.turns) for c in corpus.conversations)
    assert records["mixed"]["facts"] == records["facts"]["facts"] > 0
    assert records["mixed"]["documents"] == records["documents"]["documents"] == len(corpus.documents)
    assert records["mixed"]["chunks"] == records["documents"]["chunks"] >= len(corpus.documents)
    assert result["questions"]["documents"] == len(corpus.doc_questions) > 0
    assert r["turns"]["alone"]["recall@10"] > 0.3 and r["facts"]["alone"]["recall@10"] > 0.2, r
    # The agent's view of the mixed store: a turn or a fact finds the evidence a collection alone finds.
    assert r["turns"]["turn or fact / alone@10"] >= 0.9 and r["facts"]["turn or fact / alone@10"] >= 0.9, r
    if FULL:  # the issue's mixed/alone >= 0.97; passages are reported only (19 questions: one is 0.053)
        assert r["turns"]["turn or fact / alone@10"] >= 0.97 and r["facts"]["turn or fact / alone@10"] >= 0.97, r


def test_a_document_result_is_counted_as_a_document_by_its_type_and_artifact() -> None:
    """A chunk's id is not its artifact's: counting document results by the artifact's id alone counted
    none (the first full run reported no document among 7,590 places; there were 280)."""
    stored = {"kind": {"a1": "documents", "m1": "facts", "t1": "turns"}, "doc_of": {"a1": "library/x"}}
    assert mixed.collection_of({"id": "c9", "type": "chunk", "artifact_id": "a1"}, stored) == "documents"
    assert mixed.collection_of({"id": "a1", "type": "artifact"}, stored) == "documents"
    assert mixed.collection_of({"id": "m1", "type": "memory"}, stored) == "facts"
    assert mixed.collection_of({"id": "t1", "type": "history"}, stored) == "turns"
    assert mixed.collection_of({"id": "e1", "type": "entity"}, stored) is None
