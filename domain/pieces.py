"""Cut a text into pieces the embedding model reads whole: nothing is silently truncated."""

from __future__ import annotations

from dataclasses import dataclass, replace

from domain.model import Chunk, ChunkSpec
from domain.chunking import content_hash
from domain.ports import Chunker, Embedder, Tokenizer


@dataclass(frozen=True, slots=True)
class PieceSplitter:
    """Splits with the chunker, then re-splits any piece the model would truncate."""

    embedder: Embedder
    chunker: Chunker
    tokenizer: Tokenizer
    spec: ChunkSpec

    def __call__(self, text: str) -> list[Chunk]:
        limit = self.embedder.profile.max_tokens
        if self._fits(text, limit):
            return [Chunk(0, 0, len(text), text, self.tokenizer.count(text), content_hash(text))]
        pieces: list[Chunk] = []
        self._split(text, 0, self.spec, limit, pieces)
        return [replace(piece, index=i) for i, piece in enumerate(pieces)]

    def _fits(self, text: str, limit: int) -> bool:
        """Whether the model reads ``text`` whole: counted only when its ceiling does not settle it
        (tokenizing each piece again was a tenth of an ingest's CPU)."""
        return self.embedder.token_ceiling(text) <= limit or self.embedder.count_tokens(text) <= limit

    def _split(self, text: str, offset: int, spec: ChunkSpec, limit: int, out: list[Chunk]) -> None:
        for chunk in self.chunker.chunk(text, spec, self.tokenizer):
            if self._fits(chunk.content, limit) or spec.target_tokens <= 8:
                out.append(replace(chunk, start_char=chunk.start_char + offset,
                                   end_char=chunk.end_char + offset))
                continue
            smaller = ChunkSpec(
                target_tokens=max(spec.target_tokens // 2, 8),
                overlap_tokens=min(spec.overlap_tokens, max(spec.target_tokens // 8, 0)),
                single_piece_max_tokens=spec.single_piece_max_tokens,
            )
            self._split(chunk.content, offset + chunk.start_char, smaller, limit, out)
