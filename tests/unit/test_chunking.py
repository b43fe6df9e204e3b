"""Token-window chunking: exact offsets, overlaps, determinism, linear cost (property-based)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.memory.basics import WordTokenizer
from adapters.text.tokenizers import TiktokenTokenizer
from domain.chunking import content_hash, token_windows
from domain.errors import ValidationError
from domain.model import ChunkSpec
from plugins.chunkers.token_window import TokenWindowChunker

TIKTOKEN = TiktokenTokenizer()
specs = st.builds(lambda target, overlap: ChunkSpec(target, min(overlap, target - 1), target),
                  st.integers(1, 40), st.integers(0, 39))


def rebuild(chunks) -> str:
    text, end = "", 0
    for chunk in chunks:
        text += chunk.content[max(0, end - chunk.start_char):]
        end = chunk.end_char
    return text


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=400), specs)
def test_chunks_minus_overlaps_rebuild_the_text_exactly(text: str, spec: ChunkSpec) -> None:
    chunks = TokenWindowChunker().chunk(text, spec, TIKTOKEN)
    assert rebuild(chunks) == text
    for chunk in chunks:
        assert text[chunk.start_char:chunk.end_char] == chunk.content and chunk.content
        assert chunk.content_hash == content_hash(chunk.content)
        assert chunk.token_count <= max(spec.target_tokens, 4)  # one character is at most 4 byte tokens
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(a.start_char < b.start_char for a, b in zip(chunks, chunks[1:]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), min_size=1, max_size=200), st.integers(2, 30),
       st.integers(0, 29))
def test_overlap_is_the_configured_number_of_tokens(words: list[str], target: int, overlap: int) -> None:
    overlap = min(overlap, target - 1)
    text = " ".join(words)
    tokenizer = WordTokenizer()
    chunks = token_windows(text, tokenizer.token_starts(text), ChunkSpec(target, overlap, target))
    for a, b in zip(chunks, chunks[1:]):
        shared = text[b.start_char:a.end_char]
        assert tokenizer.count(shared) == overlap
        assert a.token_count == target


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=300), specs)
def test_chunking_is_deterministic(text: str, spec: ChunkSpec) -> None:
    assert TokenWindowChunker().chunk(text, spec, TIKTOKEN) == TokenWindowChunker().chunk(text, spec, TIKTOKEN)


def test_multibyte_characters_split_across_tokens_stay_whole() -> None:
    text = "👍🏽" * 50 + "日本語のテキスト" * 20 + "e\u0301" * 30 + "\x81" * 9
    chunks = TokenWindowChunker().chunk(text, ChunkSpec(7, 2, 7), TIKTOKEN)
    assert rebuild(chunks) == text
    assert all(a.start_char < b.start_char for a, b in zip(chunks, chunks[1:]))
    for chunk in chunks:
        chunk.content.encode("utf-8")  # no lone surrogates or half characters


def test_empty_text_has_no_chunks() -> None:
    assert TokenWindowChunker().chunk("", ChunkSpec(10, 2, 10), TIKTOKEN) == []


@pytest.mark.parametrize("spec", [ChunkSpec(0, 0, 1), ChunkSpec(10, 10, 10), ChunkSpec(10, -1, 10)])
def test_impossible_specs_are_refused(spec: ChunkSpec) -> None:
    with pytest.raises(ValidationError):
        token_windows("some text here", [0, 5, 10], spec)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="ab ✓😀東京\n", min_size=1, max_size=60), target=st.integers(1, 8), data=st.data())
def test_windows_always_move_forward_even_when_a_character_is_several_tokens(text, target, data) -> None:
    """With overlap near the target, a multi-token character once made a window end where the last did."""
    from adapters.text.tokenizers import TiktokenTokenizer
    from domain.chunk_checks import chunk_problem

    overlap = data.draw(st.integers(0, target - 1))
    tokenizer = _TIKTOKEN.setdefault("t", TiktokenTokenizer())
    chunks = token_windows(text, tokenizer.token_starts(text), ChunkSpec(target, overlap, target))
    assert chunk_problem(text, chunks) is None


_TIKTOKEN: dict = {}
