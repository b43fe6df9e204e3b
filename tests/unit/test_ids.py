"""Id patterns match whole ids only: a final newline (which "$" lets through) or any suffix is refused."""

from __future__ import annotations

import re

import pytest

from domain.errors import ValidationError
from domain.ids import ARTIFACT_ID, MEMORY_ID, new_memory_id
from domain.artifacts.usecases import check_artifact_id
from domain.validation import require_id

HEX = "0123456789abcdef" * 2


@pytest.mark.parametrize("pattern, prefix", [(MEMORY_ID, "mem_"), (ARTIFACT_ID, "art_")])
def test_a_final_newline_does_not_match_even_with_match(pattern, prefix: str) -> None:
    assert pattern.match(prefix + HEX)
    for bad in (prefix + HEX + "\n", prefix + HEX + "\r\n", "\n" + prefix + HEX, prefix + HEX.upper()):
        assert pattern.match(bad) is None, repr(bad)
        assert pattern.fullmatch(bad) is None, repr(bad)


def test_new_memory_ids_match() -> None:
    assert MEMORY_ID.fullmatch(new_memory_id())


@pytest.mark.parametrize("value", ["art_" + HEX + "\n", "art_" + HEX + "\n\n", "art_" + HEX[:-1] + "\n"])
def test_artifact_id_checks_refuse_a_trailing_newline(value: str) -> None:
    """The check artifact_get, artifact_delete and artifact_reembed share."""
    with pytest.raises(ValidationError) as raised:
        check_artifact_id(value)
    assert raised.value.field == "artifact_id"
    assert check_artifact_id("art_" + HEX) == "art_" + HEX


def test_memory_id_checks_refuse_a_trailing_newline() -> None:
    """The check memory_delete makes."""
    with pytest.raises(ValidationError) as raised:
        require_id("memory_id", "mem_" + HEX + "\n", "mem_", MEMORY_ID, "32 hex characters")
    assert raised.value.field == "memory_id"


def test_a_turn_id_reads_back_its_conversation_and_index() -> None:
    from domain.ids import turn_id, turn_of

    assert turn_of(turn_id("week_turn_3", 12)) == ("week_turn_3", 12)
    assert turn_of("mem_" + "0" * 32) is None and turn_of("_turn_4") is None and turn_of("c_turn_x") is None


@pytest.mark.parametrize("conversation", ["c", "week_turn_3", "a~b", "x_turn_1~0123456789abcdef", "é\nz" * 30])
def test_another_owners_turn_ids_never_meet_the_local_owners(conversation: str) -> None:
    """A conversation id is each owner's own: the local owner's turn ids keep the spec's form, another owner's
    name it (64 bits of its hash), fit the 160 characters of their columns, and read back their place."""
    from domain.ids import turn_id, turn_of

    local, bob, long = (turn_id(conversation, 7, owner) for owner in ("local", "bob", "u" * 100))
    assert local == f"{conversation}_turn_7" and len({local, bob, long}) == 3 and len(long) <= 160
    assert turn_of(local) == turn_of(bob) == turn_of(long) == (conversation, 7)
    # No conversation id of the local owner, whatever its text, gives another owner's turn id.
    assert re.fullmatch(r".*_turn_[0-9]+", bob, re.DOTALL) is None and re.fullmatch(r".*_turn_[0-9]+", long, re.DOTALL) is None
