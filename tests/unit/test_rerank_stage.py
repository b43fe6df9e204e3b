"""The rerank stage inside a search (Retriever over the fakes): it orders the fused candidates before the
cap and the limit, a profile or a one-signal mode turns it off, and a failing text reranker never fails it."""

from __future__ import annotations

from dataclasses import replace

from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.ports.reranking import RerankerError
from domain.search.retrieval import PROFILES, RetrievalConfig
from tests.conftest import searcher, synced

TEXTS = ["The staging database runs on heronpond.", "Backups of the staging database run nightly.",
         "The database of staging is small.", "Lunch is at noon.", "Staging deploys need a database migration."]


class Backwards:
    """A learned stage that puts the fused order upside down (and says what it saw)."""

    version = "test"

    def __init__(self) -> None:
        self.seen: list[list[dict[str, float]]] = []

    def score(self, rows):
        self.seen.append(list(rows))
        return [-r["fused_rr"] for r in rows]


class Failing:
    name = "stand-in/rerank"

    def rerank(self, query, documents):
        raise RerankerError("HTTP 429: rate limited")


class ByLength:
    name = "stand-in/rerank"

    def rerank(self, query, documents):
        return [float(len(d)) for d in documents]


def stored(world) -> dict[str, str]:
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer)
    return {store(StoreMemoryRequest(text, "fact", 0.9)).id: text for text in TEXTS}


def test_the_learned_stage_orders_the_candidates_before_the_limit(world) -> None:
    stored(world)
    plain = searcher(synced(world))
    fused = [h.id for h in plain("staging database", {"memory": {}}, 50)]
    scorer = Backwards()
    staged = replace(plain, scorer=scorer)
    assert [h.id for h in staged("staging database", {"memory": {}}, 50)] == fused[::-1]
    # The limit cuts after the stage: the best two of its order, not of the fused one.
    assert [h.id for h in staged("staging database", {"memory": {}}, 2)] == fused[::-1][:2]
    assert len(scorer.seen[0]) == len(fused) and scorer.seen[0][0]["is_memory"] == 1.0


def test_a_profile_or_a_one_signal_mode_turns_the_stage_off(world) -> None:
    stored(world)
    plain = searcher(synced(world))
    profiles = {**PROFILES, "recall": replace(PROFILES["recall"], rerank=False)}
    scorer = Backwards()
    off = replace(plain, scorer=scorer, config=RetrievalConfig(profiles=profiles))
    assert [h.id for h in off("staging database", {"memory": {}}, 50)] == \
        [h.id for h in replace(plain, config=RetrievalConfig(profiles=profiles))("staging database", {"memory": {}}, 50)]
    on = replace(plain, scorer=scorer)
    for mode in ("lexical", "vector"):
        assert [h.id for h in on("staging database", {"memory": {}}, 50, mode=mode)] == \
            [h.id for h in plain("staging database", {"memory": {}}, 50, mode=mode)]
    assert scorer.seen == []
    assert [h.id for h in on("staging database", {"memory": {}}, 50, mode="hybrid")] != \
        [h.id for h in plain("staging database", {"memory": {}}, 50, mode="hybrid")]


def test_a_failing_text_reranker_falls_back_to_the_learned_stage_with_a_warning(world) -> None:
    stored(world)
    plain = searcher(synced(world))
    fused = [h.id for h in plain("staging database", {"memory": {}}, 50)]
    notes: list[str] = []
    hits = replace(plain, scorer=Backwards(), text_reranker=Failing())("staging database", {"memory": {}}, 50,
                                                                      notes=notes)
    assert [h.id for h in hits] == fused[::-1]  # the learned stage's order: the search did not fail
    assert notes == ["reranker stand-in/rerank failed (HTTP 429: rate limited); "
                     "the learned rerank stage ordered the results"]
    # Without a list to note it in, the search still answers.
    assert [h.id for h in replace(plain, scorer=Backwards(), text_reranker=Failing())(
        "staging database", {"memory": {}}, 50)] == fused[::-1]


def test_a_text_reranker_that_answers_orders_the_results(world) -> None:
    texts = stored(world)
    plain = searcher(synced(world))
    notes: list[str] = []
    hits = replace(plain, scorer=Backwards(), text_reranker=ByLength())("staging database", {"memory": {}}, 50,
                                                                       notes=notes)
    lengths = [len(texts[h.id]) for h in hits]
    assert lengths == sorted(lengths, reverse=True) and notes == []
