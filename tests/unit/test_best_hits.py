"""One signal's best hits across collections: read best match first, and only as deep as needed."""

from __future__ import annotations

import random

import pytest

from domain.model import Hit, LexicalMatch, RequestContext, VectorMatch
from domain.search.retrieval import RetrievalConfig
from domain.search.retrieve import Retriever, tagged


class Rows:
    """A ranker's hydration over made-up rows: some records are gone (or not the caller's), and some
    score below their best match (their best vector is of an old version)."""

    def __init__(self, gone: set[str], lowered: dict[str, float], rounding: bool = False) -> None:
        self.gone, self.lowered, self.read, self.rounding = gone, lowered, [], rounding

    def hydrate(self, collection, found, context, read=None):
        self.read += [m.record_id for m in found]
        best: dict[str, float] = {}
        for m in found:
            if m.record_id not in self.gone:  # a hit scores no better than its match (but may round up)
                score = min(self.lowered.get(m.record_id, m.score), m.score)
                score = round(score, 6) if self.rounding and collection == "memory" else score
                best[m.record_id] = max(best.get(m.record_id, -1.0), score)
        return sorted((Hit(i, collection, s, "", {}) for i, s in best.items()), key=lambda h: -h.score)


def everything(rows: Rows, found, depth: int) -> list[tuple[str, float]]:
    """What reading every record gives: all hits, best first (ties by id), the first ``depth``."""
    hits = [tagged(h, c) for c, matches in found.items() for h in rows.hydrate(c, matches, None)]
    return [(h.id, h.score) for h in sorted(hits, key=lambda h: (-h.score, h.id))[:depth]]


@pytest.mark.parametrize("seed", range(40))
def test_the_best_hits_are_those_of_reading_every_record(seed: int) -> None:
    rng = random.Random(seed)
    found = {}
    for collection in ("chunk", "artifact"):
        matches = []
        for n in range(rng.randint(0, 90)):
            record = f"{collection}_{rng.randint(0, 70)}"
            score = round(rng.random(), 2)  # coarse: ties happen
            matches.append(VectorMatch(f"{record}::v{n}", record, score) if collection == "chunk"
                           else LexicalMatch(record, score))
        found[collection] = matches
    ids = {m.record_id for ms in found.values() for m in ms}
    gone = {i for i in ids if rng.random() < 0.2}
    lowered = {i: round(rng.random() * 0.5, 2) for i in ids if rng.random() < 0.2}
    depth = rng.choice([5, 20, 60])
    rows = Rows(gone, lowered)
    best = Retriever(None, rows, RetrievalConfig())._best(found, depth, RequestContext(), {})
    assert [(h.id, h.score) for h in best] == everything(Rows(gone, lowered), found, depth)
    assert all(h.fields["collections"] for h in best)


def test_when_every_record_is_current_and_visible_only_the_best_depth_are_read() -> None:
    found = {"chunk": [VectorMatch(f"c{i}::v", f"c{i}", 1 - i / 200) for i in range(60)],
             "artifact": [LexicalMatch(f"a{i}", 1 - (i + 0.5) / 200) for i in range(60)]}
    rows = Rows(set(), {})
    best = Retriever(None, rows, RetrievalConfig())._best(found, 60, RequestContext(), {})
    assert len(best) == 60 and len(rows.read) == 60  # 30 of each collection, not 120
    rows = Rows({"c0", "a0"}, {})  # two of the best are gone: the next two take their places
    best = Retriever(None, rows, RetrievalConfig())._best(found, 60, RequestContext(), {})
    assert [h.id for h in best][:2] == ["c1", "a1"] and len(best) == 60 and "c30" in {h.id for h in best}


def test_a_record_read_later_wins_a_tie_by_its_id() -> None:
    """x's best match is old (it scores 0.5, not 0.9); a, not read yet, may score 0.5 too and comes first."""
    found = {"chunk": [VectorMatch("x::v", "x", 0.9), VectorMatch("a::v", "a", 0.5)]}
    best = Retriever(None, Rows(set(), {"x": 0.5}), RetrievalConfig())._best(found, 1, RequestContext(), {})
    assert [h.id for h in best] == ["a"]


def test_a_hit_whose_score_rounds_up_is_still_ranked_as_reading_everything_ranks_it() -> None:
    """A memory's hit shows its score to 6 decimals: 0.81234555 becomes 0.812346, above 0.8123456."""
    found = {"chunk": [VectorMatch("c::v", "c", 0.8123456)], "memory": [VectorMatch("m::v", "m", 0.81234555)]}
    rows = Rows(set(), {}, rounding=True)
    best = Retriever(None, rows, RetrievalConfig())._best(found, 1, RequestContext(), {})
    assert [h.id for h in best] == [h for h, _ in everything(Rows(set(), {}, rounding=True), found, 1)] == ["m"]
