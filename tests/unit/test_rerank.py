"""The rerank stage's features and ordering (domain/search/rerank.py): pure, no fake needed."""

from __future__ import annotations

import pytest

from domain.model import Hit
from domain.ports.reranking import RerankerError
from domain.search.rerank import DEPTH, FEATURES, Evidence, features, rerank, stem


def turn(i: int, text: str, score: float, signals: dict[str, int], ts: str = "2024-03-10T12:00:00Z",
         similarity: float | None = 0.5) -> Hit:
    return Hit(f"t{i}", "history", score, text, {"conversation_id": "c", "turn_index": i, "signals": signals,
                                                 "similarity": similarity, "provenance": {"ts": ts}})


def chunk(i: int, text: str, score: float, title: str, headings: list[str]) -> Hit:
    return Hit(f"a::chunk::{i}", "chunk", score, text, {
        "artifact_id": "a", "chunk_index": i, "signals": {"lexical": i + 1}, "similarity": None,
        "provenance": {"title": title}, "structure": {"heading_path": headings}})


EVIDENCE = Evidence(("heronpond", "staging", "database"), {"heronpond": 5.0, "staging": 2.0, "database": 1.0})


def test_every_candidate_has_every_feature_and_the_rarest_word_counts_most() -> None:
    hits = [turn(0, "the staging database is slow", 0.3, {"semantic": 1}),
            turn(5, "Heronpond's staging box", 0.2, {"lexical": 1, "semantic": 2})]
    ranked = {"semantic": hits, "lexical": [Hit("t5", "history", 7.0, "")]}
    rows = features(hits, ranked, EVIDENCE)
    assert all(set(row) == set(FEATURES) for row in rows)
    assert rows[0]["cover_rarest"] == 0.0 and rows[1]["cover_rarest"] == 1.0
    assert rows[0]["cover_idf"] == pytest.approx(3 / 8) and rows[1]["cover_idf"] == pytest.approx(7 / 8)
    assert rows[0]["cover_all"] == 0.0 and rows[1]["cover_count"] == pytest.approx(2 / 3)
    assert rows[1]["rr_lexical"] == 1.0 and rows[0]["rr_lexical"] == 0.0 and rows[1]["rel_lexical"] == 1.0
    assert rows[0]["fused_rr"] == 1.0 and rows[1]["fused_rr"] == 0.5
    assert rows[0]["is_history"] == 1.0 and rows[0]["is_chunk"] == 0.0


def test_a_short_word_is_matched_whole_and_a_longer_one_by_its_stem() -> None:
    assert stem("running") == "runn" and stem("goes") == "goe" and stem("gas") == "gas"
    hits = [turn(0, "a good idea", 0.2, {}), turn(3, "we go there, racing often", 0.1, {})]
    rows = features(hits, {}, Evidence(("go", "races"), {}))
    assert rows[0]["cover_count"] == 0.0  # "good" is not "go"
    assert rows[1]["cover_count"] == 1.0  # "go" itself, "racing" by the stem of "races"


def test_a_turn_is_credited_with_its_neighbours_words_and_lexical_rank_among_the_candidates() -> None:
    hits = [turn(4, "Where is it?", 0.3, {"semantic": 1}), turn(5, "heronpond, on the staging box", 0.2, {"lexical": 1}),
            turn(9, "nothing here", 0.1, {"semantic": 2})]
    rows = features(hits, {"lexical": [Hit("t5", "history", 4.0, "")]}, EVIDENCE)
    assert rows[0]["near_cover_gain"] == pytest.approx(7 / 8) and rows[0]["near_lexical"] == 1.0
    assert rows[0]["near_cos"] == 0.5 and rows[2]["near_cos"] == 0.0
    assert rows[2]["near_cover_gain"] == 0.0 and rows[2]["near_lexical"] == 0.0  # turn 9 has no neighbour here


def test_a_chunk_whose_title_or_headings_name_the_query_words_says_so() -> None:
    hits = [chunk(0, "text", 0.3, "heronpond", ["Setup"]), chunk(7, "text", 0.2, "other", ["Staging database"])]
    rows = features(hits, {}, EVIDENCE)
    assert rows[0]["title_cover"] == pytest.approx(5 / 8) and rows[1]["title_cover"] == pytest.approx(3 / 8)
    assert rows[0]["near_cover_gain"] == 0.0  # chunks 0 and 7 are not neighbours


def test_recency_and_the_dates_the_query_names() -> None:
    hits = [turn(0, "x", 0.3, {}, ts="2024-01-01T00:00:00Z"), turn(9, "x", 0.2, {}, ts="2024-03-01T00:00:00Z"),
            turn(20, "x", 0.1, {}, ts="2024-02-01T00:00:00Z"), Hit("m", "memory", 0.05, "x", {"signals": {}})]
    march = (1709251200.0, 1711929600.0)  # 2024-03-01 .. 2024-04-01
    rows = features(hits, {}, Evidence(("x",), {}, (march,)))
    assert [r["recency"] for r in rows][:2] == [0.0, 1.0] and 0 < rows[2]["recency"] < 1 and rows[3]["recency"] == 0.5
    assert [r["in_span"] for r in rows] == [0.0, 1.0, 0.0, 0.0] and rows[0]["dated"] == 1.0


class Scorer:
    version = "test"

    def __init__(self, by: str, sign: float = 1.0) -> None:
        self.by, self.sign, self.calls = by, sign, 0

    def score(self, rows):
        self.calls += 1
        return [self.sign * r[self.by] for r in rows]


class Reranker:
    name = "stand-in/rerank"

    def __init__(self, answer=None, error: Exception | None = None) -> None:
        self.answer, self.error = answer, error

    def rerank(self, query, documents):
        if self.error:
            raise self.error
        return self.answer(documents)


def fused(n: int) -> list[Hit]:
    return [turn(i, f"turn {i}", round(1.0 - i / 100, 6), {"semantic": i + 1}) for i in range(n)]


def test_the_scorer_orders_the_first_candidates_and_each_place_keeps_its_fused_score() -> None:
    hits = fused(DEPTH + 5)
    out = rerank("q", hits, {}, Evidence(("turn",)), Scorer("fused_rr", -1.0))  # the worst fused first
    assert [h.id for h in out[:DEPTH]] == [f"t{i}" for i in reversed(range(DEPTH))]
    assert out[DEPTH:] == hits[DEPTH:]  # past the depth: as fused
    assert [h.score for h in out] == [h.score for h in hits]  # the page's scores still fall
    assert out[0].fields["signals"] == {"semantic": DEPTH}  # a hit keeps its signals' ranks


def test_ties_keep_the_fused_order_and_no_scorer_leaves_it() -> None:
    hits = fused(6)
    assert rerank("q", hits, {}, Evidence(("turn",)), Scorer("cover_all")) == hits
    assert rerank("q", hits, {}, Evidence(("turn",)), None) == hits


def test_a_text_reranker_orders_when_it_answers() -> None:
    hits, notes = fused(4), []
    out = rerank("q", hits, {}, Evidence(()), Scorer("fused_rr"), Reranker(lambda docs: [len(docs) - i for i in
                                                                                             range(len(docs))][::-1]), notes)
    assert [h.id for h in out] == ["t3", "t2", "t1", "t0"] and notes == []


@pytest.mark.parametrize("reranker", [Reranker(error=RerankerError("timed out after 5 s")),
                                      Reranker(lambda docs: [1.0])])  # a wrong number of scores
def test_a_failing_text_reranker_leaves_the_order_to_the_learned_stage_with_one_note(reranker) -> None:
    hits, notes = fused(4), []
    scorer = Scorer("fused_rr", -1.0)
    out = rerank("q", hits, {}, Evidence(()), scorer, reranker, notes)
    assert [h.id for h in out] == ["t3", "t2", "t1", "t0"] and scorer.calls == 1
    assert len(notes) == 1 and notes[0].startswith("reranker stand-in/rerank failed (")
    assert "learned rerank stage" in notes[0]


def test_a_failing_text_reranker_without_a_learned_stage_leaves_the_fused_order() -> None:
    hits, notes = fused(4), []
    assert rerank("q", hits, {}, Evidence(()), None, Reranker(error=RerankerError("401")), notes) == hits
    assert notes == ["reranker stand-in/rerank failed (401); results are in fused order"]
