"""memtrove-sentences: chunks made of whole sentences, packed up to the target size.

An example of a third-party chunker plugin. memtrove calls ``memtrove_register_chunkers`` (found
through the ``memtrove`` entry-point group) with a ``register`` callable; each registered object
has a ``name``, a ``version`` and ``chunk(text, spec, tokenizer) -> list[Chunk]`` whose chunks
cover the text exactly (``text[start_char:end_char] == content``, no gaps).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import pluggy

from domain.model import Chunk, ChunkSpec
from domain.ports import Tokenizer

hookimpl = pluggy.HookimplMarker("memtrove")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")


class SentenceChunker:
    name = "sentences"
    version = "1"

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]:
        """Sentences packed until the next would pass the target; a longer sentence is cut at tokens."""
        bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
        sentences = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
        chunks: list[Chunk] = []
        start = end = used = 0
        for a, b in sentences:
            size = tokenizer.count(text[a:b])
            if end > start and used + size > spec.target_tokens:
                self._emit(chunks, text, start, end, used)
                start, used = end, 0
            if size > spec.target_tokens:  # one sentence alone is too long: cut it at token starts
                starts = [a + s for s in tokenizer.token_starts(text[a:b])]
                for i in range(0, len(starts), spec.target_tokens):
                    cut = starts[i + spec.target_tokens] if i + spec.target_tokens < len(starts) else b
                    if cut > start:
                        self._emit(chunks, text, start, cut, min(spec.target_tokens, len(starts) - i))
                    start = cut
                end, used = b, 0
                continue
            end, used = b, used + size
        if end > start or not chunks:
            if len(text) > start:
                self._emit(chunks, text, start, len(text), max(used, 1))
        return chunks

    @staticmethod
    def _emit(chunks: list[Chunk], text: str, start: int, end: int, tokens: int) -> None:
        piece = text[start:end]
        chunks.append(Chunk(len(chunks), start, end, piece, max(1, tokens),
                            hashlib.sha256(piece.encode("utf-8")).hexdigest(), {"sentences": True}))


@hookimpl
def memtrove_register_chunkers(register: Callable[[object], None]) -> None:
    register(SentenceChunker())
