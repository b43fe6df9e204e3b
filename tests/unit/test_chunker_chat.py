"""The chat chunker: the chunker contract (word and cl100k tokenizers), properties on generated chat
logs in every recognised line format, and a composed log."""

from __future__ import annotations

import functools
from bisect import bisect_left
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.text.tokenizers import TiktokenTokenizer
from domain.chunk_checks import chunk_problem
from domain.model import Chunk, ChunkSpec
from domain.artifacts.usecases import reconstruct
from plugins.chunkers.chat import ChatChunker, memtrove_register_chunkers
from plugins.testing import ChunkerContract, SimpleTokenizer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOG = (FIXTURES / "chat.log").read_text(encoding="utf-8")
SPEC = ChunkSpec(target_tokens=200, overlap_tokens=20, single_piece_max_tokens=200)


@functools.cache
def cl100k() -> TiktokenTokenizer:
    return TiktokenTokenizer()


IRC = "[10:02:11] <@alice> morning all\n[10:02:40] <bob> hi alice\n[10:03:05] <bob> did the deploy finish?\n"
WHATSAPP = ("01/05/2024, 10:32 - Bob Smith: Are we still on for lunch?\n5/1/24, 9:05 PM - Zoë: yes 😀\n"
            "see you at noon\n")
TRANSCRIPT = ("Interviewer: Tell me about the outage.\r\nEngineer: It started at 02:00 UTC.\r\n"
              "The pager fired twice.\r\nInterviewer: And the fix?\r\nEngineer: A config rollback.\r\n")
MARKDOWN = "**Host:** Welcome to the show.\n**Guest**: Thanks for having me.\n\nGlad to be here.\n"
SAMPLES = [LOG, IRC, WHATSAPP, TRANSCRIPT, MARKDOWN, "no speaker anywhere\njust lines\n"]


class TestChatChunker(ChunkerContract):
    @pytest.fixture
    def chunker(self) -> ChatChunker:
        return ChatChunker()

    @pytest.fixture
    def samples(self) -> list[str]:
        return SAMPLES


class TestChatChunkerTiktoken(TestChatChunker):
    @pytest.fixture
    def tokenizer(self) -> TiktokenTokenizer:
        return cl100k()


def chunk(text: str, spec: ChunkSpec = SPEC, tokenizer=None) -> list[Chunk]:
    chunks = ChatChunker().chunk(text, spec, tokenizer or SimpleTokenizer())
    assert chunk_problem(text, chunks) is None
    return chunks


# --- the composed log and the line formats ------------------------------------------------------

def test_the_log_groups_whole_turns_after_its_preamble() -> None:
    chunks = chunk(LOG)
    assert chunks[0].metadata == {"part": "preamble"}
    assert chunks[0].content == "Exported from #billing-migration on 2024-05-06\nParticipants: maria, jorg, priya\n\n"
    turns = [c.metadata for c in chunks[1:]]
    assert turns[0]["turns"][0] == 0 and turns[-1]["turns"][1] == 8
    assert all(a["turns"][1] + 1 == b["turns"][0] for a, b in zip(turns, turns[1:]))
    assert turns[0]["speakers"][:3] == ["Maria", "Jörg", "Priya"] and turns[0]["first_ts"] == "2024-05-06 09:30"
    assert turns[-1]["last_ts"] == "2024-05-06 09:41"


def test_the_log_with_a_small_target_cuts_only_the_long_turns() -> None:
    spec = ChunkSpec(target_tokens=30, overlap_tokens=5, single_piece_max_tokens=30)
    chunks = chunk(LOG, spec, cl100k())
    pieces = [c for c in chunks if "piece" in c.metadata]
    assert pieces and all(c.token_count <= 30 for c in chunks)
    listing = [c for c in pieces if c.metadata["turns"] == [4, 4]]  # Priya's numbered list
    assert len(listing) > 1 and all(c.metadata["speaker"] == "Priya" and c.metadata["ts"] == "2024-05-06 09:34"
                                    for c in listing)
    assert [c.metadata["piece"] for c in listing] == [[k, len(listing)] for k in range(len(listing))]
    whole = [c for c in chunks[1:] if "piece" not in c.metadata]
    assert all(c.content.startswith("[2024-05-06 ") for c in whole)


@pytest.mark.parametrize(("line", "speaker", "ts"), [
    ("Alice: hello", "Alice", None),
    ("Dr. Jane Smith: hello", "Dr. Jane Smith", None),
    ("李雷: 你好", "李雷", None),
    ("[2024-05-01 10:32] Speaker One: text", "Speaker One", "2024-05-01 10:32"),
    ("[01/05/2024, 10:32:11] Bob: text", "Bob", "01/05/2024, 10:32:11"),
    ("  [10:32] Bob: indented stamp", "Bob", "10:32"),
    ("2024-05-01 10:32 - Speaker: text", "Speaker", "2024-05-01 10:32"),
    ("2024-05-01T10:32:00Z Speaker: text", "Speaker", "2024-05-01T10:32:00Z"),
    ("01/05/2024, 10:32 - Bob Smith: text", "Bob Smith", "01/05/2024, 10:32"),
    ("5/1/24, 9:05 PM - Zoë: text", "Zoë", "5/1/24, 9:05 PM"),
    ("10:32 Bob: text", "Bob", "10:32"),
    ("<alice> text", "alice", None),
    ("<@op> text", "op", None),
    ("[10:02:11] <bob> text", "bob", "10:02:11"),
    ("**Host**: text", "Host", None),
    ("**Host:** text", "Host", None),
    ("Bob:", "Bob", None),
])
def test_line_formats(line: str, speaker: str, ts: str | None) -> None:
    chunks = chunk(f"{line}\ncontinued here\n")
    assert len(chunks) == 1
    expected = {"turns": [0, 0], "speakers": [speaker], "speaker": speaker}
    if ts:
        expected |= {"first_ts": ts, "last_ts": ts, "ts": ts}
    assert chunks[0].metadata == expected


@pytest.mark.parametrize("line", ["http://example.com: a link", "  Alice: indented plain name", "2024: a year",
                                  "The long meeting went well: yes", "[no digits] Bob: hi", "- Bob: hi",
                                  "**not closed: hi", "<a b> spaces in nick", "Bob:no space"])
def test_lines_that_do_not_start_a_turn(line: str) -> None:
    assert chunk(f"{line}\n")[0].metadata == {"part": "preamble"}


def test_in_a_log_of_marked_turns_a_bare_name_line_is_text() -> None:
    chunks = chunk("[10:00] Ann: hi\nBob: quoted inside Ann's message\n[10:01] Bob: hello\n<cy> hey\nNote: x\n")
    assert chunks[0].metadata == {"turns": [0, 2], "speakers": ["Ann", "Bob", "cy"], "first_ts": "10:00",
                                  "last_ts": "10:01"}
    holding = [c for c in chunk(LOG, ChunkSpec(12, 0, 12)) if "Participants:" in c.content]
    assert [c.metadata for c in holding] == [{"part": "preamble"}]


def test_in_a_log_of_bare_lines_every_name_line_is_a_turn() -> None:
    assert chunk("Ann: hi\nBob: hello\nNote: x\nAnn: ok\n")[0].metadata == {
        "turns": [0, 3], "speakers": ["Ann", "Bob", "Note"]}


def test_turns_are_grouped_up_to_the_target_and_never_cut() -> None:
    text = "".join(f"{'Ann' if i % 2 else 'Bob'}: message number {i} here\n" for i in range(40))
    chunks = chunk(text, ChunkSpec(30, 5, 30))
    assert all(c.content.startswith(("Ann:", "Bob:")) and c.content.endswith("here\n") for c in chunks)
    assert all(c.token_count <= 30 for c in chunks) and len(chunks) > 5
    assert all(c.metadata["speakers"] == ["Ann", "Bob"] or c.metadata["speakers"] == ["Bob", "Ann"]
               for c in chunks)


def test_a_long_turn_is_cut_and_keeps_its_speaker() -> None:
    text = "Ann: short\nBob: " + "word " * 300 + "\nAnn: after\n"
    chunks = chunk(text, ChunkSpec(50, 10, 50))
    pieces = [c for c in chunks if c.metadata["turns"] == [1, 1]]
    assert len(pieces) > 5 and all(c.metadata["speaker"] == "Bob" for c in pieces)
    assert chunks[0].metadata["turns"] == [0, 0] and chunks[-1].metadata["turns"] == [2, 2]
    assert all(b.start_char < a.end_char for a, b in zip(pieces, pieces[1:]))  # overlap inside the turn only


def test_text_without_turns_is_preamble_windows() -> None:
    chunks = chunk("plain prose, " * 200, ChunkSpec(40, 5, 40))
    assert len(chunks) > 3 and all(c.metadata == {"part": "preamble"} for c in chunks)


def test_registers_itself_through_the_hook() -> None:
    found: list = []
    memtrove_register_chunkers(register=found.append)
    assert [type(c) for c in found] == [ChatChunker] and found[0].name == "chat" and found[0].version == "1"


# --- properties on generated logs ----------------------------------------------------------------

WORDS = ["ok", "deploy", "the", "we", "Zoë", "東京", "寿司", "😀", "👍🏽", "naïve", "e\u0301", "שלום", "42", "3.5",
         "it's", "(draft)", "lunch", "friday", "✓", "a"]
NAMES = ["Alice", "Bob Smith", "Zoë", "李雷", "Dr. Who", "user", "O'Neil"]
STAMPS = ["2024-05-01 10:32", "10:32", "09:05:11", "01/05/2024, 10:32", "5/1/24, 9:05 PM", "2024-05-01T10:32:00Z"]
FORMATS = {
    "plain": lambda name, ts: f"{name}:",
    "bracket": lambda name, ts: f"[{ts}] {name}:",
    "dash": lambda name, ts: f"{ts} - {name}:",
    "stamp": lambda name, ts: f"{ts} {name}:",
    "irc": lambda name, ts: f"<{name.replace(' ', '_')}>",
    "irc-stamp": lambda name, ts: f"[{ts}] <{name.replace(' ', '_')}>",
    "bold": lambda name, ts: f"**{name}**:",
    "bold-colon": lambda name, ts: f"**{name}:**",
}
STAMPED = {"bracket", "dash", "stamp", "irc-stamp"}

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=25).map(" ".join)


@st.composite
def logs(draw) -> tuple[str, list[tuple[int, str, str | None]]]:
    """A chat log and its turns (start, speaker, stamp as written), as the chunker must find them."""
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    formats = draw(st.lists(st.sampled_from(sorted(FORMATS)), min_size=1, max_size=3))
    text = "".join(f"{line}{nl}" for line in draw(st.lists(words, max_size=3)))  # preamble
    found = []
    for _ in range(draw(st.integers(1, 25))):
        form, name, ts = draw(st.sampled_from(formats)), draw(st.sampled_from(NAMES)), draw(st.sampled_from(STAMPS))
        start = len(text)
        text += FORMATS[form](name, ts) + draw(st.sampled_from(["", " ", *(f" {word}" for word in WORDS)]))
        for line in draw(st.lists(words, max_size=4)):  # continuation lines
            text += f"{nl}{draw(st.sampled_from(['', '  ']))}{line}"
        text += nl
        speaker = name.replace(" ", "_") if form.startswith("irc") else name
        found.append((start, speaker, ts if form in STAMPED else None, form == "plain"))
    if draw(st.booleans()):
        text = text[:-len(nl)]
    marked = not all(is_bare for *_, is_bare in found)  # then bare "Name:" lines are text (documented)
    return text, [(s, n, ts) for s, n, ts, is_bare in found if not (marked and is_bare)]


specs = st.builds(lambda target, overlap: ChunkSpec(target, min(overlap, target - 1), target),
                  st.integers(6, 150), st.integers(0, 16))


def turn_size(starts: list[int], lo: int, hi: int) -> int:
    """Tokens of ``text[lo:hi]`` as the chunker counts them: those starting inside, plus one running across ``lo``."""
    first = bisect_left(starts, lo)
    return bisect_left(starts, hi) - first + int(first == len(starts) or starts[first] != lo)


def check_log(text: str, turns: list[tuple[int, str, str | None]], spec: ChunkSpec, tokenizer) -> None:
    chunks = chunk(text, spec, tokenizer)
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert ChatChunker().chunk(text, spec, tokenizer) == chunks
    assert all(c.token_count <= spec.target_tokens for c in chunks)
    bounds = [start for start, _, _ in turns] + [len(text)]
    token_starts = tokenizer.token_starts(text)
    for c in chunks:
        if c.start_char < bounds[0]:
            assert c.metadata == {"part": "preamble"} and c.end_char <= bounds[0]
            continue
        first = bisect_left(bounds, c.start_char + 1) - 1
        last = bisect_left(bounds, c.end_char) - 1
        held = turns[first:last + 1]
        assert c.metadata["turns"] == [first, last]
        assert c.metadata["speakers"] == list(dict.fromkeys(name for _, name, _ in held))
        stamps = [ts for _, _, ts in held if ts]
        assert (c.metadata.get("first_ts"), c.metadata.get("last_ts")) == (
            (stamps[0], stamps[-1]) if stamps else (None, None))
        if first == last:
            assert c.metadata["speaker"] == held[0][1] and c.metadata.get("ts") == held[0][2]
    for k in range(len(turns)):
        lo, hi = bounds[k], bounds[k + 1]
        cut = any(lo < edge < hi for c in chunks for edge in (c.start_char, c.end_char))
        if turn_size(token_starts, lo, hi) <= spec.target_tokens:
            assert not cut, f"turn {k} was cut though it fits"
        else:
            assert all(c.metadata["turns"] == [k, k] and "piece" in c.metadata
                       for c in chunks if c.start_char < hi and c.end_char > lo)


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.data_too_large])


@PROPERTY
@given(logs(), specs)
def test_generated_logs(log: tuple[str, list], spec: ChunkSpec) -> None:
    check_log(*log, spec, SimpleTokenizer())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs(), specs)
def test_generated_logs_with_cl100k(log: tuple[str, list], spec: ChunkSpec) -> None:
    check_log(*log, spec, cl100k())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["Ann: ", "[10:00] ", "<bob> ", "**Cy**: ", "01/05/2024, 10:32 - ", "\n", "\r\n",
                                 "  ", "word ", "😀", "e\u0301", "東京", ":", "<", "[", "]", "**", "-"]),
                max_size=50).map("".join), specs)
def test_any_mix_of_chat_syntax_rebuilds_exactly(text: str, spec: ChunkSpec) -> None:
    chunks = chunk(text, spec)
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert all(c.token_count <= spec.target_tokens for c in chunks)
