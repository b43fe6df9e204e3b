"""Embedding pieces never exceed the model's window; fetch-until-enough keeps limits honest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.memory.basics import HashEmbedder, WordTokenizer
from domain.search.fusion import best_per_record, weighted_rrf
from domain.model import ChunkSpec, VectorMatch
from domain.pieces import PieceSplitter
from plugins.chunkers.token_window import TokenWindowChunker


class WideWordEmbedder(HashEmbedder):
    """Counts three model tokens per word, so pieces sized in tokenizer words can still overflow."""

    def count_tokens(self, text: str) -> int:
        return 3 * len(text.split()) + 2


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 400), st.integers(10, 60))
def test_no_piece_exceeds_the_model_window(words: int, target: int) -> None:
    embedder = WideWordEmbedder(max_tokens=32)
    split = PieceSplitter(embedder, TokenWindowChunker(), WordTokenizer(), ChunkSpec(target, target // 4, target))
    text = " ".join(f"w{i}" for i in range(words))
    pieces = split(text)
    assert all(embedder.count_tokens(p.content) <= 32 for p in pieces)
    assert [p.index for p in pieces] == list(range(len(pieces)))
    assert all(text[p.start_char:p.end_char] == p.content for p in pieces)
    assert pieces[0].start_char == 0 and pieces[-1].end_char == len(text)


def test_short_text_is_one_piece() -> None:
    split = PieceSplitter(HashEmbedder(), TokenWindowChunker(), WordTokenizer(), ChunkSpec(30, 5, 30))
    (piece,) = split("just a few words")
    assert (piece.start_char, piece.end_char, piece.content) == (0, 16, "just a few words")


def test_best_per_record_keeps_the_top_piece() -> None:
    matches = [VectorMatch("a0", "a", 0.5), VectorMatch("b0", "b", 0.7), VectorMatch("a1", "a", 0.9)]
    assert [(m.id, m.score) for m in best_per_record(matches)] == [("a1", 0.9), ("b0", 0.7)]


def test_weighted_rrf_sums_weight_over_k_plus_rank_and_names_the_ranks() -> None:
    fused = weighted_rrf({"lexical": ["a", "b"], "semantic": ["b", "c"]}, {"lexical": 0.6, "semantic": 0.3}, 10)
    assert fused["a"] == (0.6 / 11, {"lexical": 1})
    assert fused["b"][0] == 0.6 / 12 + 0.3 / 11 and fused["b"][1] == {"lexical": 2, "semantic": 1}
    assert fused["c"] == (0.3 / 12, {"semantic": 2})
    assert weighted_rrf({}, {}, 60) == {}


def test_profiles_modes_and_their_errors() -> None:
    from domain.errors import ValidationError
    from domain.search.retrieval import RetrievalConfig

    config = RetrievalConfig()
    assert config.signal_weights(None, None)[0] == {"lexical": 0.55, "semantic": 0.3, "contextual": 0.1, "exact": 0.1,
                                                     "graph": 0.1, "when": 0.5, "symbol": 0.3}
    assert config.signal_weights(None, None)[1].k == 10
    assert config.signal_weights("vector", "default") == ({"semantic": 1.0}, config.profiles["default"])
    assert config.signal_weights("lexical", "code")[0] == {"lexical": 1.0, "exact": 0.4 / 0.3}
    with pytest.raises(ValidationError) as mode:
        config.signal_weights("fuzzy", None)
    assert mode.value.field == "mode" and "hybrid, vector, lexical" in mode.value.message
    with pytest.raises(ValidationError) as profile:
        config.signal_weights(None, "legal")
    assert profile.value.field == "profile" and "conversational" in profile.value.message
