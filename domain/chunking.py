"""Token-window chunk planning (pure): exact character offsets, linear in the text's size."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from domain.errors import ValidationError
from domain.model import Chunk, ChunkSpec


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def token_windows(text: str, token_starts: Sequence[int], spec: ChunkSpec) -> list[Chunk]:
    """Overlapping windows of ``spec.target_tokens`` tokens, cut at token starts.

    ``token_starts[i]`` is the character offset where token ``i`` begins. Tokens that begin inside
    the same character (one emoji can be several byte-level tokens) move together as one unit,
    so a chunk never holds half a character. Every chunk is ``text[start_char:end_char]``, and
    chunks minus their overlaps give back the text exactly. Each token is visited a bounded
    number of times, so the cost is linear in ``len(text)``.
    """
    check_spec(spec)
    # units[k]: index of the first token of the k-th distinct start offset
    units = [i for i in range(len(token_starts)) if i == 0 or token_starts[i] != token_starts[i - 1]]
    n = len(units)
    if n == 0:
        return []
    chunks: list[Chunk] = []
    step = spec.target_tokens - spec.overlap_tokens
    pos = 0
    while True:
        end = min(pos + spec.target_tokens, n)
        start_char = 0 if pos == 0 else token_starts[units[pos]]
        end_char = len(text) if end == n else token_starts[units[end]]
        piece = text[start_char:end_char]
        chunks.append(Chunk(
            index=len(chunks), start_char=start_char, end_char=end_char, content=piece,
            token_count=(len(token_starts) if end == n else units[end]) - units[pos],
            content_hash=content_hash(piece),
        ))
        if end == n:
            return chunks
        pos += step


def check_spec(spec: ChunkSpec) -> None:
    if spec.target_tokens < 1:
        raise ValidationError("chunk_target_tokens", "chunk_target_tokens must be >= 1")
    if not 0 <= spec.overlap_tokens < spec.target_tokens:
        raise ValidationError(
            "chunk_overlap_tokens",
            f"chunk_overlap_tokens must be >= 0 and below chunk_target_tokens ({spec.target_tokens})",
        )
