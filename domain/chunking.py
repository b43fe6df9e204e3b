"""Token-window chunk planning (pure): exact character offsets, linear in the text's size."""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Sequence

from domain.errors import ValidationError
from domain.model import Chunk, ChunkSpec


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_windows(text: str, token_starts: Sequence[int], spec: ChunkSpec) -> list[Chunk]:
    """Overlapping windows of at most ``spec.target_tokens`` tokens, cut at token starts.

    ``token_starts[i]`` is the character offset where token ``i`` begins. Tokens that begin inside
    the same character (one emoji can be several byte-level tokens) move together as one unit,
    so a chunk never holds half a character. Every chunk is ``text[start_char:end_char]``, and
    chunks minus their overlaps give back the text exactly. Both window ends only move forward,
    so the cost is linear in ``len(text)``.
    """
    check_spec(spec)
    total = len(token_starts)
    if total == 0:
        return []
    # units[k]: index of the first token of the k-th distinct start offset; the last entry closes.
    units = [i for i in range(total) if i == 0 or token_starts[i] != token_starts[i - 1]] + [total]
    last = len(units) - 1
    chunks: list[Chunk] = []
    start = end = 0
    while True:
        end = max(end, start + 1)  # at least one unit, even one character longer than the target
        while end < last and units[end + 1] - units[start] <= spec.target_tokens:
            end += 1
        start_char = 0 if start == 0 else token_starts[units[start]]
        end_char = len(text) if end == last else token_starts[units[end]]
        piece = text[start_char:end_char]
        chunks.append(Chunk(index=len(chunks), start_char=start_char, end_char=end_char, content=piece,
                            token_count=units[end] - units[start], content_hash=content_hash(piece)))
        if end == last:
            return chunks
        start = max(start + 1, bisect_left(units, units[end] - spec.overlap_tokens, start + 1, end))


def check_spec(spec: ChunkSpec) -> None:
    if spec.target_tokens < 1:
        raise ValidationError("chunk_target_tokens", "chunk_target_tokens must be >= 1")
    if not 0 <= spec.overlap_tokens < spec.target_tokens:
        raise ValidationError(
            "chunk_overlap_tokens",
            f"chunk_overlap_tokens must be >= 0 and below chunk_target_tokens ({spec.target_tokens})",
        )
