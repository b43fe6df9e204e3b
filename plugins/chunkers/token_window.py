"""The token-window chunker: overlapping windows of cl100k tokens; the fallback for every text."""

from __future__ import annotations

from collections.abc import Callable

from domain.chunking import token_windows
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker, Tokenizer
from plugins.hookspecs import hookimpl


class TokenWindowChunker(Chunker):
    name = "token-window"
    version = "1"

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]:
        return token_windows(text, tokenizer.token_starts(text), spec)


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(TokenWindowChunker())
