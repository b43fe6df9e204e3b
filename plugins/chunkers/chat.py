"""The chat chunker: a chat log or transcript cut between speaker turns, never inside one that fits.

A turn starts at a line in one of these forms (the timestamp is optional and kept as written):

- ``Speaker: text`` (at the line's start; a name of at most four words that starts with a letter),
  a turn only in a log where no turn is marked by a stamp, ``<nick>`` or ``**Name**``;
- ``[2024-05-01 10:32] Speaker: text``, ``[10:32:11] <nick> text``: any bracketed stamp holding a digit;
- ``2024-05-01 10:32 - Speaker: text``, ``01/05/2024, 10:32 - Speaker: text`` (WhatsApp), ``10:32 Speaker: text``;
- ``<Speaker> text`` (IRC; a leading ``@``/``+`` mode sign is dropped from the nick);
- ``**Speaker**: text`` or ``**Speaker:** text`` (Markdown).

Any other line continues the turn before it; text before the first turn is its own chunk(s) with
``{"part": "preamble"}``. Consecutive whole turns are grouped while the group fits in
``spec.target_tokens``; a turn alone past the target is cut by token windows. Every turn chunk has

    {"turns": [first, last], "speakers": [in order, unique], "first_ts": ..., "last_ts": ...}

(turn indexes count recognised turns from 0; the stamps are the first and last ones written in the
chunk, absent when none is). A chunk of one turn, or a piece of one, adds ``"speaker"`` (and
``"ts"``); a piece adds ``"piece": [k, pieces]``. Offsets are exact; linear in the text's size.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from domain.chunking import content_hash, span_chunks
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker
from plugins.chunkers.base import StructureChunker
from plugins.hookspecs import hookimpl

_MERIDIEM = r"(?:[ \t]?[AaPp]\.?[Mm]\.?)?"
_STAMP = (r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
          rf"|\d{{1,4}}[./-]\d{{1,2}}[./-]\d{{1,4}},?[ \t]+\d{{1,2}}:\d{{2}}(?::\d{{2}})?{_MERIDIEM}"
          rf"|\d{{1,2}}:\d{{2}}(?::\d{{2}})?{_MERIDIEM}")
_NAME = r"[^\W\d_][\w.'’@&+()-]*(?: [\w.'’@&+()-]+){0,3}"
TURN = re.compile(
    rf"^(?:[ \t]*\[(?P<bracket>(?=[^\]\n]{{0,59}}\d)[^\]\n]{{1,60}})\][ \t]*(?:[-–][ \t]*)?"
    rf"|(?P<stamp>{_STAMP})[ \t]+(?:[-–][ \t]+)?)?"
    rf"(?:<[@+%~&]?(?P<irc>[^\s<>]{{1,40}})>(?=\s|$)"
    rf"|\*\*(?P<bold>{_NAME})(?::\*\*|\*\*:)(?=\s|$)"
    rf"|(?P<plain>{_NAME}):(?=\s|$))",
    re.MULTILINE,
)


class ChatChunker(StructureChunker):
    name = "chat"
    version = "1"

    def cut(self, text: str, spec: ChunkSpec, starts: list[int]) -> list[Chunk]:
        turns = recognised(text)
        bounds = [start for start, _, _ in turns] + [len(text)]
        chunks: list[Chunk] = []
        if not turns or turns[0][0] > 0:
            chunks += span_chunks(text, starts, 0, bounds[0], spec, {"part": "preamble"}, 0)
        # at[k]: the first token starting at or after turn k's start; loose[k]: 1 when a token runs
        # across that start, counted as the turn's own (so sizes are never under-counted).
        at = [bisect_left(starts, b) for b in bounds]
        loose = [int(a == len(starts) or starts[a] != b) for a, b in zip(at, bounds)]
        size = [at[k + 1] - at[k] + loose[k] for k in range(len(turns))]
        first = 0
        while first < len(turns):
            if size[first] > spec.target_tokens:
                pieces = span_chunks(text, starts, bounds[first], bounds[first + 1], spec, {}, len(chunks))
                for k, piece in enumerate(pieces):
                    chunks.append(replace(piece, metadata={**describe(turns, first, first), "piece": [k, len(pieces)]}))
                first += 1
                continue
            last, budget = first, spec.target_tokens + at[first] - loose[first]  # turns fit while at[end] <= budget
            while last + 1 < len(turns) and size[last + 1] <= spec.target_tokens and at[last + 2] <= budget:
                last += 1
            lo, hi = bounds[first], bounds[last + 1]
            piece = text[lo:hi]
            chunks.append(Chunk(index=len(chunks), start_char=lo, end_char=hi, content=piece,
                                token_count=at[last + 1] - at[first] + loose[first], content_hash=content_hash(piece),
                                metadata=describe(turns, first, last)))
            first = last + 1
        return chunks


def recognised(text: str) -> list[tuple[int, str, str | None]]:
    """(start, speaker, stamp) of each turn. In a log whose turns are marked (a stamp, ``<nick>``,
    ``**Name**``), a bare ``Name: text`` line is text: a ``Participants: ...`` line of an export or a
    ``Note: ...`` line inside a message. Only a log of bare lines is cut at them."""
    found = [(m.start(), *m.group("irc", "bold", "plain", "bracket", "stamp")) for m in TURN.finditer(text)]
    marked = any(irc or bold or bracket or stamp for _, irc, bold, _, bracket, stamp in found)
    return [(start, irc or bold or plain, bracket or stamp) for start, irc, bold, plain, bracket, stamp in found
            if not marked or not plain or bracket or stamp]


def describe(turns: list[tuple[int, str, str | None]], first: int, last: int) -> dict[str, Any]:
    """The metadata of a chunk holding turns ``first`` to ``last``."""
    held = turns[first:last + 1]
    meta: dict[str, Any] = {"turns": [first, last], "speakers": list(dict.fromkeys(s for _, s, _ in held))}
    stamps = [ts for _, _, ts in held if ts is not None]
    if stamps:
        meta["first_ts"], meta["last_ts"] = stamps[0], stamps[-1]
    if first == last:
        meta["speaker"] = held[0][1]
        if stamps:
            meta["ts"] = stamps[0]
    return meta


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(ChatChunker())
