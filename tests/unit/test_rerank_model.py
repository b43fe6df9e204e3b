"""The learned rerank stage's shipped model (adapters/rerank/learned.py): it loads from the package, reads the
features the domain computes, scores deterministically, names its version, and the server's Retriever uses it."""

from __future__ import annotations

import hashlib
import json

import pytest

from adapters.rerank.learned import DEFAULT_MODEL, LearnedCandidateScorer
from domain.errors import ConfigurationError
from domain.model import Hit
from domain.search.rerank import FEATURES, Evidence, features


def candidates() -> list[dict[str, float]]:
    hits = [Hit(f"t{i}", "history", 1.0 - i / 10, text, {"conversation_id": "c", "turn_index": i,
                                                         "signals": signals, "similarity": 0.6 - i / 20})
            for i, (text, signals) in enumerate([("heronpond staging", {"semantic": 1, "lexical": 2}),
                                                 ("the staging database", {"lexical": 1}),
                                                 ("lunch at noon", {"semantic": 2}),
                                                 ("heronpond", {"semantic": 3, "lexical": 3})])]
    return features(hits, {"lexical": [Hit("t1", "history", 3.0, ""), Hit("t0", "history", 2.0, "")]},
                    Evidence(("heronpond", "staging"), {"heronpond": 4.0, "staging": 1.5}))


def test_the_shipped_model_reads_the_domains_features_and_scores_deterministically() -> None:
    scorer = LearnedCandidateScorer()
    assert scorer.names == FEATURES  # trained on exactly what the stage computes, in its order
    rows = candidates()
    first = scorer.score(rows)
    assert len(first) == len(rows) and all(isinstance(s, float) for s in first)
    assert LearnedCandidateScorer().score(rows) == first == scorer.score(rows)
    assert scorer.score(rows[::-1]) == first[::-1]  # each candidate's score is its own


def test_a_short_memory_first_by_meaning_and_by_words_stays_above_long_document_chunks() -> None:
    """The e2e mixed store (tests/e2e/test_mixed_store_ranking.py): the one memory holding "heronpond" was put
    second, below a long chunk, by a model that read a record's length against every kind of candidate."""
    memory = Hit("m", "memory", 0.1, "The heronpond staging database is restored every Sunday night.",
                 {"signals": {"semantic": 1, "lexical": 1}, "similarity": 0.62})
    body = "Configure the staging database connection pool and logging handlers for each worker. " * 18
    chunks = [Hit(f"a::chunk::{i}", "chunk", 0.098 - i / 1000, body, {
        "artifact_id": "a", "chunk_index": 2 * i, "signals": {"semantic": i + 2, "lexical": i + 2},
        "similarity": 0.61 - i / 100, "provenance": {"title": "logging-cookbook"},
        "structure": {"heading_path": ["Logging Cookbook"]}}) for i in range(12)]
    hits = [memory, *chunks]
    ranked = {"semantic": hits, "lexical": [Hit(h.id, h.type, 9.0 - n, "") for n, h in enumerate(hits)]}
    rows = features(hits, ranked, Evidence(("heronpond", "staging", "database"),
                                           {"heronpond": 6.0, "staging": 2.5, "database": 2.0}))
    scores = LearnedCandidateScorer().score(rows)
    assert scores[0] == max(scores), scores


def test_its_version_names_the_file_and_its_digest() -> None:
    digest = hashlib.sha256(DEFAULT_MODEL.read_bytes()).hexdigest()[:12]
    assert LearnedCandidateScorer().version == f"rerank-v1@{digest}"
    assert DEFAULT_MODEL.parent.name == "models" and DEFAULT_MODEL.parent.parent.name == "rerank"


def test_an_unreadable_or_misshapen_model_is_refused_naming_the_file(tmp_path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="broken.json cannot be read"):
        LearnedCandidateScorer(path)
    model = json.loads(DEFAULT_MODEL.read_text(encoding="utf-8"))
    model["mean"] = model["mean"][:-1]
    path.write_text(json.dumps(model), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="do not fit its features"):
        LearnedCandidateScorer(path)
    path.write_text(json.dumps({**model, "format": "other/9"}), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="is not of format"):
        LearnedCandidateScorer(path)


def test_the_servers_retriever_reranks_with_the_shipped_model(tmp_path) -> None:
    from config.container import Application
    from config.settings import Settings

    app = Application(settings=Settings(memtrove_data_dir=tmp_path, memtrove_embedder="local"))
    try:
        retriever = app.use_cases.retrieve()
        assert isinstance(retriever.scorer, LearnedCandidateScorer)
        assert retriever.scorer.version == LearnedCandidateScorer().version
        assert retriever.config.profiles[retriever.config.default_profile].rerank
    finally:
        app.shutdown_resources()
