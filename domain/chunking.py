"""Token-window chunk planning (pure): exact character offsets, linear in the text's size."""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

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
    start = end = previous_end = 0
    while True:
        end = max(end, start + 1)  # at least one unit, even one character longer than the target
        while end < last and units[end + 1] - units[start] <= spec.target_tokens:
            end += 1
        if chunks and end <= previous_end:
            # The next unit (a character of several tokens) does not fit beside the overlap: give
            # up overlap until it does, so every window ends past the one before.
            end = previous_end + 1
            while start < previous_end and units[end] - units[start] > spec.target_tokens:
                start += 1
        start_char = 0 if start == 0 else token_starts[units[start]]
        end_char = len(text) if end == last else token_starts[units[end]]
        piece = text[start_char:end_char]
        chunks.append(Chunk(index=len(chunks), start_char=start_char, end_char=end_char, content=piece,
                            token_count=units[end] - units[start], content_hash=content_hash(piece)))
        if end == last:
            return chunks
        previous_end = end
        start = max(start + 1, bisect_left(units, units[end] - spec.overlap_tokens, start + 1, end))


def span_chunks(text: str, starts: list[int], lo: int, hi: int, spec: ChunkSpec, meta: dict[str, Any],
                first_index: int) -> list[Chunk]:
    """``text[lo:hi]`` as one chunk when it fits, else token windows over it, from the whole text's
    token starts (a token that began before ``lo`` counts as one starting there)."""
    first, last = bisect_left(starts, lo), bisect_left(starts, hi)
    count = last - first + int(first == last or starts[first] != lo)
    if count <= spec.target_tokens:
        piece = text[lo:hi]
        return [Chunk(first_index, lo, hi, piece, count, content_hash(piece), dict(meta))]
    local = [s - lo for s in starts[first:last]]
    if local[0] != 0:
        local.insert(0, 0)
    windows = token_windows(text[lo:hi], local, spec)
    return [replace(c, index=first_index + k, start_char=c.start_char + lo, end_char=c.end_char + lo,
                    metadata=dict(meta)) for k, c in enumerate(windows)]


def check_spec(spec: ChunkSpec) -> None:
    if spec.target_tokens < 1:
        raise ValidationError("chunk_target_tokens", "chunk_target_tokens must be >= 1")
    if not 0 <= spec.overlap_tokens < spec.target_tokens:
        raise ValidationError(
            "chunk_overlap_tokens",
            f"chunk_overlap_tokens must be >= 0 and below chunk_target_tokens ({spec.target_tokens})",
        )
