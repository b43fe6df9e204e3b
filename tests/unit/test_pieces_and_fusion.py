"""Embedding pieces never exceed the model's window; fetch-until-enough keeps limits honest."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.memory import HashEmbedder, WordTokenizer
from domain.fusion import best_per_record, fetch_distinct
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


def test_fetch_distinct_asks_again_until_limit_distinct() -> None:
    pool = [VectorMatch(f"a{i}", "a", 1 - i / 100) for i in range(20)] + [VectorMatch("b", "b", 0.5),
                                                                          VectorMatch("c", "c", 0.4)]
    asked: list[int] = []

    def query(n: int) -> list[VectorMatch]:
        asked.append(n)
        return pool[:n]

    got = fetch_distinct(query, lambda ms: ms, limit=3, first_fetch=6)
    assert [m.record_id for m in got] == ["a", "b", "c"] and asked == [6, 24]


def test_fetch_distinct_stops_when_the_index_runs_dry() -> None:
    got = fetch_distinct(lambda n: [VectorMatch("a", "a", 1.0)], lambda ms: ms, limit=5, first_fetch=5)
    assert len(got) == 1
