"""What every chunker's output must satisfy, checked before anything is stored.

A chunker is a plugin and may be a stranger's code: its chunks are verified here, so a wrong one
is refused (and the fallback chunker used) instead of corrupting an artifact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from domain.chunking import content_hash
from domain.model import Chunk


def situating_text(metadata: dict[str, object]) -> str:
    """Where a chunk sits, from its chunker's metadata: heading path, email subject, code name.

    Embedded before the chunk's text and indexed beside it (lower weighted), so a chunk is found
    by the section it belongs to, not only by its own words.
    """
    parts: list[str] = []
    path = metadata.get("heading_path")
    if isinstance(path, list) and path:
        parts.append(" > ".join(str(p) for p in path))
    headers = metadata.get("headers")
    if isinstance(headers, dict) and headers.get("subject"):
        parts.append(str(headers["subject"]))
    name = metadata.get("qualified_name")
    if isinstance(name, str) and name:
        parts.append(name)
    return " | ".join(parts)


def chunk_problem(text: str, chunks: Sequence[Chunk]) -> str | None:
    """Why ``chunks`` are not a valid chunking of ``text``, or None when they are.

    Valid: indexes 0..n-1; each chunk is the non-empty ``text[start_char:end_char]`` with its
    SHA-256; the first starts at 0, the last ends at the text's end, and each starts no later than
    the previous one ended (no gap) while both ends move forward; metadata is a JSON object.
    """
    if not text:
        return "chunks of an empty text" if chunks else None
    if not chunks:
        return "no chunks for a non-empty text"
    previous: Chunk | None = None
    for position, chunk in enumerate(chunks):
        where = f"chunk {position}"
        if not isinstance(chunk, Chunk):
            return f"{where} is a {type(chunk).__name__}, not a Chunk"
        if chunk.index != position:
            return f"{where} has index {chunk.index}"
        if not 0 <= chunk.start_char < chunk.end_char <= len(text):
            return f"{where} spans [{chunk.start_char}, {chunk.end_char}) outside [0, {len(text)}) or empty"
        if chunk.content != text[chunk.start_char:chunk.end_char]:
            return f"{where} content differs from text[{chunk.start_char}:{chunk.end_char}]"
        if chunk.content_hash != content_hash(chunk.content):
            return f"{where} content_hash is not the SHA-256 of its content"
        if not isinstance(chunk.token_count, int) or chunk.token_count < 1:
            return f"{where} token_count {chunk.token_count!r} is not a positive integer"
        if not isinstance(chunk.metadata, dict):
            return f"{where} metadata is not a dict"
        try:
            json.dumps(chunk.metadata)
        except (TypeError, ValueError):
            return f"{where} metadata is not JSON-serialisable"
        if previous is None:
            if chunk.start_char != 0:
                return "the first chunk does not start at 0"
        else:
            if chunk.start_char > previous.end_char:
                return f"gap between chunk {position - 1} and {where}"
            if chunk.start_char < previous.start_char or chunk.end_char <= previous.end_char:
                return f"{where} does not move forward"
        previous = chunk
    if previous is not None and previous.end_char != len(text):
        return "the last chunk does not end at the text's end"
    return None

