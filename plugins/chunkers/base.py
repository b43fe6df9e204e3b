"""What the structure-aware chunkers share: the size check, nothing for no text, token starts once."""

from __future__ import annotations

from domain.chunking import check_spec
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker, Tokenizer


class StructureChunker(Chunker):
    """Subclasses implement ``cut`` over the whole text's token starts (computed once, linear)."""

    name: str
    version: str

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]:
        check_spec(spec)
        if not text:
            return []
        return self.cut(text, spec, tokenizer.token_starts(text))

    def cut(self, text: str, spec: ChunkSpec, starts: list[int]) -> list[Chunk]:
        raise NotImplementedError
