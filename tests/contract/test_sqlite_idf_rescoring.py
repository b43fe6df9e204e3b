"""SQLite's word search scores FTS5's shortlist again with the idf it is given (issue 43.1): FTS5's bm25()
takes no idf, so each word's term-frequency part is its one-word bm25() divided by FTS5's own idf. Given
FTS5's own idf back, the scores must be FTS5's own, exactly: also for a word in more than half the records
(FTS5's idf at its floor, 1e-6) and for words counted only up to the match budget."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from sqlalchemy import text

import adapters.lexical.fts
from adapters.sql.store import make_engine
from tests.contract.lexical_index_contract import AUDIT, memory

TEXTS = ["ferry to the harbour at dawn", "ferry ferry and a lighthouse by the harbour", "ferry at noon",
         "the harbour wall", "ferry tickets", "harbour ferry harbour", "a ferry and more", "quiet ferry",
         "ferry again", "the harbour master", "tea at home", "a long walk home along the quiet coast road"]


@pytest.fixture
def store(tmp_path: Path):
    from adapters.sql.ledger import SqlStore

    store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
    for i, content in enumerate(TEXTS):
        store.add_memory(memory(f"mem_{i:02d}", content), AUDIT)
    yield store
    store.close()


def fts5(store, words: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """FTS5's own idf of each word, and its bm25() of the records holding any of them (higher is better)."""
    query = " OR ".join(f'"{w}"' for w in words)
    with store._engine.connect() as conn:  # noqa: SLF001 - FTS5 itself is the reference
        total = conn.execute(text("SELECT count(*) FROM fts_memory")).scalar()
        held = {w: conn.execute(text("SELECT count(*) FROM fts_memory WHERE fts_memory MATCH :q"),
                                {"q": f'"{w}"'}).scalar() for w in words}
        scores = dict(conn.execute(text(
            "SELECT d.record_id, -bm25(fts_memory, 1.0, 0.35) FROM fts_memory JOIN lexical_docs d ON d.id = "
            "fts_memory.rowid WHERE fts_memory MATCH :q"), {"q": query}).all())
    return {w: max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) for w, n in held.items()}, scores


def test_given_fts5s_own_idf_the_scores_are_fts5s_own(store) -> None:
    words = ["ferry", "harbour", "lighthouse"]
    own, expected = fts5(store, words)
    assert own["ferry"] == 1e-6 and own["lighthouse"] > 1  # 9 of 12 records: at FTS5's floor
    found = store.lexical_search("memory", words, 20, idf=own)
    assert {m.record_id: m.score for m in found} == pytest.approx(expected, rel=1e-9)
    assert [m.record_id for m in found] == sorted(expected, key=lambda r: (-expected[r], r))[:len(found)]
    lucene = store.lexical_search("memory", words, 20)  # its own idf: Lucene's, ferry weighs something
    assert {m.record_id for m in lucene} == set(expected)
    assert next(m.score for m in lucene if m.record_id == "mem_08") > 0.1  # "ferry again"


def test_words_past_the_budget_are_weighed_by_their_full_count(store, monkeypatch) -> None:
    """Every word is common: the newest records holding them are scored, each word's holders counted in full."""
    monkeypatch.setattr(adapters.lexical.fts, "MATCH_BUDGET", 2)
    words = ["ferry", "harbour"]
    own, expected = fts5(store, words)
    found = store.lexical_search("memory", words, 20, idf=own)
    assert found and {m.record_id for m in found} <= set(expected)
    assert {m.record_id: m.score for m in found} == pytest.approx({m.record_id: expected[m.record_id] for m in found},
                                                                  rel=1e-9)
