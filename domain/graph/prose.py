"""What of a document a graph build reads: its prose, each part once.

Names and sentences are read from prose only. Code, tables, directives and markup are not prose: in
documentation they are most of what looks like a name ("= Perm", "Color'>", "Description |"). The
chunker that cut a document knows its markup: one that is a ``ProseReader`` (Markdown, reST) gives
the prose of the whole text, so that a chunk's part of it is read with its context (a literal block
after "Example::" is code even when a chunk starts there); a chunk its chunker marked as code or a
table, or as source code (a ``language``), or kept out of the indexes (quoted mail, a signature), is not read at all. Chunks may overlap: each part of the
text is read once, by the first chunk that holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from domain.artifacts.usecases import reconstruct
from domain.graph.extraction import Passage
from domain.model import Artifact, ArtifactChunk

VERSION = "1"  # bump when what is read changes: every document is read again by the next build
NOT_PROSE = ("code", "table")  # a chunk's ``kind`` (plugins/chunkers/markdown.py)


@runtime_checkable
class ProseReader(Protocol):
    """A chunker that tells a text's prose from its markup."""

    def prose(self, text: str) -> str:
        """``text`` with every character that is not prose blanked (line breaks kept): the same length."""
        ...


def artifact_passages(artifact: Artifact, chunks: Sequence[ArtifactChunk],
                      reader: ProseReader | None) -> list[Passage]:
    """The passages of an artifact's prose: one per chunk that holds some (its index as ``part``)."""
    if not chunks:
        read = _prose(reader, artifact.content or "")
        return [Passage("artifact", artifact.id, read, when=artifact.ts)] if read.strip() else []
    whole = reconstruct(chunks)
    read = _prose(reader, whole)
    passages: list[Passage] = []
    done = 0  # the text read so far (chunks may overlap)
    for chunk in sorted(chunks, key=lambda c: c.index):
        start = max(chunk.start_char, done)
        if chunk.end_char <= start:
            continue
        done = chunk.end_char
        meta = chunk.metadata
        if meta.get("kind") in NOT_PROSE or meta.get("language") or meta.get("indexed") is False:
            continue  # code, a table, source code, quoted mail or a signature
        text = read[start:chunk.end_char]
        if text.strip():
            passages.append(Passage("artifact", artifact.id, text, part=chunk.index, when=artifact.ts))
    return passages


def _prose(reader: ProseReader | None, text: str) -> str:
    if reader is None:
        return text
    read = reader.prose(text)
    if not isinstance(read, str) or len(read) != len(text):
        raise ValueError(f"{type(reader).__name__}.prose answered a text of another length")
    return read
