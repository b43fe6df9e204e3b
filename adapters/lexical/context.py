"""What a history turn is indexed with besides its own words: its neighbours', weighted lower.

A question about a conversation often names words of the turns around the answer (the question
it answers, the remark it follows), so each turn's lexical entry carries them in a second,
lower-weighted field. Every lexical index (SQLite, PostgreSQL, the in-memory fake) uses these.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

CONTEXT_TURNS = 2  # the turns up to 2 before and after a turn are its context


def turn_contexts(turns: Sequence[tuple[str, int, str, Hashable]], radius: int = CONTEXT_TURNS) -> dict[str, str]:
    """For turns (id, turn_index, content, audience) of one conversation: id -> the neighbouring turns'
    text, of the neighbours with the same audience only (what a turn is found by, its readers may read)."""
    by_index = {index: (content, audience) for _, index, content, audience in turns}
    return {tid: "\n".join(by_index[j][0] for j in range(index - radius, index + radius + 1)
                           if j != index and j in by_index and by_index[j][1] == audience)
            for tid, index, _, audience in turns}
