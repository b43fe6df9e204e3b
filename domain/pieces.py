"""Cut a text into pieces the embedding model reads whole: nothing is silently truncated."""

from __future__ import annotations

from dataclasses import dataclass

from domain.model import ChunkSpec
from domain.ports import Chunker, Embedder, Tokenizer


@dataclass(frozen=True, slots=True)
class Piece:
    """A slice of a text the model reads whole: ``text[start_char:end_char] == content``. Unlike a
    chunk it carries no token count or hash: nothing reads them, and counting was a tenth of an ingest."""

    index: int
    start_char: int
    end_char: int
    content: str


@dataclass(frozen=True, slots=True)
class PieceSplitter:
    """Splits with the chunker, then re-splits any piece the model would truncate."""

    embedder: Embedder
    chunker: Chunker
    tokenizer: Tokenizer
    spec: ChunkSpec

    def __call__(self, text: str) -> list[Piece]:
        limit = self.embedder.profile.max_tokens
        if self._fits(text, limit):
            return [Piece(0, 0, len(text), text)]
        pieces: list[Piece] = []
        self._split(text, 0, self.spec, limit, pieces)
        return pieces

    def _fits(self, text: str, limit: int) -> bool:
        """Whether the model reads ``text`` whole: counted only when its ceiling does not settle it
        (tokenizing each piece again was a tenth of an ingest's CPU)."""
        return self.embedder.token_ceiling(text) <= limit or self.embedder.count_tokens(text) <= limit

    def _split(self, text: str, offset: int, spec: ChunkSpec, limit: int, out: list[Piece]) -> None:
        for chunk in self.chunker.chunk(text, spec, self.tokenizer):
            if self._fits(chunk.content, limit) or spec.target_tokens <= 8:
                out.append(Piece(len(out), chunk.start_char + offset, chunk.end_char + offset, chunk.content))
                continue
            smaller = ChunkSpec(
                target_tokens=max(spec.target_tokens // 2, 8),
                overlap_tokens=min(spec.overlap_tokens, max(spec.target_tokens // 8, 0)),
                single_piece_max_tokens=spec.single_piece_max_tokens,
            )
            self._split(chunk.content, offset + chunk.start_char, smaller, limit, out)
