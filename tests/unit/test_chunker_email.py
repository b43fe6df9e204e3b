"""The email chunker: the chunker contract (word and cl100k tokenizers), properties on generated
threads (messages, quotes, signatures, headers), and a composed mbox thread."""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.text.tokenizers import TiktokenTokenizer
from domain.chunk_checks import chunk_problem
from domain.model import Chunk, ChunkSpec
from domain.artifacts.usecases import reconstruct
from plugins.chunkers.email import EmailChunker, memtrove_register_chunkers
from plugins.testing import ChunkerContract, SimpleTokenizer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
THREAD = (FIXTURES / "thread.mbox").read_text(encoding="utf-8")
SPEC = ChunkSpec(target_tokens=200, overlap_tokens=20, single_piece_max_tokens=200)


@functools.cache
def cl100k() -> TiktokenTokenizer:
    return TiktokenTokenizer()


SINGLE_CRLF = ("From: Ann Lee <ann@example.com>\r\nTo: bob@example.com\r\nSubject: Lunch\r\n"
               "Date: Tue, 7 May 2024 12:00:00 +0000\r\n\r\nThursday works for me.\r\n\r\n"
               "On Tue, 7 May 2024 at 11:00, Bob <bob@example.com> wrote:\r\n> Lunch on Thursday?\r\n")
CONCATENATED = ("From: Ann <ann@example.com>\nDate: Tue, 7 May 2024 12:00:00 +0000\nSubject: Plan\n"
                "Message-ID: <a1@example.com>\n\nShall we ship on Friday?\n\n"
                "From: Bob <bob@example.com>\nDate: Tue, 7 May 2024 13:00:00 +0000\nSubject: Re: Plan\n"
                "Message-ID: <b1@example.com>\n\nFriday is fine.\n\n"
                "From: Ann <ann@example.com>\nSent: Tuesday, May 7, 2024 12:00 PM\nTo: Bob\nSubject: Plan\n\n"
                "Shall we ship on Friday?\n")
SAMPLES = [THREAD, SINGLE_CRLF, CONCATENATED, "Just a note with no headers.\n\n-- \nAnn", "Subject: only headers\n",
           "Note: this looks like a header\nbut is the first line of plain prose.\n"]


class TestEmailChunker(ChunkerContract):
    @pytest.fixture
    def chunker(self) -> EmailChunker:
        return EmailChunker()

    @pytest.fixture
    def samples(self) -> list[str]:
        return SAMPLES


class TestEmailChunkerTiktoken(TestEmailChunker):
    @pytest.fixture
    def tokenizer(self) -> TiktokenTokenizer:
        return cl100k()


def chunk(text: str, spec: ChunkSpec = SPEC, tokenizer=None) -> list[Chunk]:
    chunks = EmailChunker().chunk(text, spec, tokenizer or SimpleTokenizer())
    assert chunk_problem(text, chunks) is None
    return chunks


def indexed(c: Chunk) -> bool:
    return c.metadata.get("indexed", True) is not False


# --- the composed mbox thread -------------------------------------------------------------------

def test_the_mbox_thread_splits_by_message_with_decoded_headers() -> None:
    chunks = chunk(THREAD)
    assert sorted({c.metadata["message_index"] for c in chunks}) == [0, 1, 2, 3]
    first = chunks[0].metadata["headers"]
    assert first == {"from": "Maria López <maria.lopez@example.org>", "to": "Dev Team <dev@example.org>",
                     "cc": "Jörg Schmidt <jorg@example.org>", "date": "Mon, 6 May 2024 09:14:02 +0200",
                     "subject": "Database migration plan for the billing service",
                     "message_id": "<m1.migration@example.org>"}
    assert chunks[0].content.startswith("From maria.lopez@example.org ") and chunks[0].metadata["part"] == "headers"
    assert not indexed(chunks[0])
    assert {c.metadata["headers"]["message_id"] for c in chunks if c.metadata["message_index"] == 3} == {
        "<m4.migration@example.org>"}


def test_the_mbox_thread_keeps_quotes_and_signatures_out_of_the_index() -> None:
    chunks = chunk(THREAD)
    searchable = "".join(c.content for c in chunks if indexed(c))
    assert "> " not in searchable and "wrote:" not in searchable and "Original Message" not in searchable
    assert "Staff Engineer" not in searchable and "Sent from my phone" not in searchable
    assert "Best regards" not in searchable and "Thanks,\nMaria" not in searchable
    for needle in ("410 million rows", "throttle it to 5,000 rows", "Priya owns it", "Rehearsal"):
        assert needle in searchable
    # the Outlook block at the bottom of the last message is history, whole
    assert chunks[-1].metadata["part"] == "quoted" and chunks[-1].content.startswith("-----Original Message-----")
    parts = [(c.metadata["message_index"], c.metadata["part"]) for c in chunks]
    assert parts == [(0, "headers"), (0, "body"), (0, "signature"), (1, "headers"), (1, "body"), (1, "quoted"),
                     (1, "signature"), (2, "headers"), (2, "quoted"), (2, "body"), (2, "quoted"), (2, "body"),
                     (2, "signature"), (3, "headers"), (3, "body"), (3, "quoted")]


def test_the_mbox_thread_with_cl100k_splits_long_bodies_inside_their_message() -> None:
    spec = ChunkSpec(target_tokens=24, overlap_tokens=4, single_piece_max_tokens=24)
    chunks = chunk(THREAD, spec, cl100k())
    assert reconstruct(chunks) == THREAD  # type: ignore[arg-type]
    assert all(c.token_count <= 24 for c in chunks)
    bodies = [c for c in chunks if c.metadata["part"] == "body" and c.metadata["message_index"] == 0]
    assert len(bodies) > 3 and all(b.start_char < a.end_char for a, b in zip(bodies, bodies[1:]))  # overlapping


# --- shapes of input ----------------------------------------------------------------------------

def test_a_single_crlf_message() -> None:
    chunks = chunk(SINGLE_CRLF)
    assert [c.metadata["part"] for c in chunks] == ["headers", "body", "quoted"]
    assert chunks[0].content.endswith("\r\n\r\n") and chunks[1].content.startswith("Thursday")
    assert chunks[0].metadata["headers"] == {"from": "Ann Lee <ann@example.com>", "to": "bob@example.com",
                                             "date": "Tue, 7 May 2024 12:00:00 +0000", "subject": "Lunch"}


def test_concatenated_messages_split_but_an_outlook_block_is_history() -> None:
    chunks = chunk(CONCATENATED)
    assert [(c.metadata["message_index"], c.metadata["part"]) for c in chunks] == [
        (0, "headers"), (0, "body"), (1, "headers"), (1, "body"), (1, "quoted")]
    assert chunks[2].content.startswith("From: Bob") and chunks[4].content.startswith("From: Ann")
    assert chunks[4].metadata["headers"]["subject"] == "Re: Plan"


@pytest.mark.parametrize("text", ["Plain words only.", "Note: remember the milk\n\nand eggs", "Re: earlier\ntext",
                                  "\n\n  \n", "Subject: x\nno blank line after me"])
def test_text_without_a_header_block_is_one_message_without_headers(text: str) -> None:
    chunks = chunk(text)
    assert {c.metadata["message_index"] for c in chunks} == {0}
    assert all(c.metadata["headers"] == {} and c.metadata["part"] == "body" for c in chunks)


def test_leading_blank_lines_then_headers() -> None:
    chunks = chunk("\n\nSubject: Hello\nFrom: a@example.com\n\nBody text.\n")
    assert [c.metadata["part"] for c in chunks] == ["headers", "body"]
    assert chunks[0].metadata["headers"] == {"subject": "Hello", "from": "a@example.com"}


def test_encoded_folded_and_malformed_header_values() -> None:
    encoded = base64.b64encode("Réunion à 東京 😀".encode()).decode()
    text = (f"From: =?utf-8?q?Zo=C3=AB?= <zoe@example.com>\nSubject: =?utf-8?b?{encoded}?=\nTo: a@example.com,\n"
            " b@example.com\nCc: =?bogus?x?broken?=\nDate: someday\n\nHi.\n")
    headers = chunk(text)[0].metadata["headers"]
    assert headers == {"from": "Zoë <zoe@example.com>", "subject": "Réunion à 東京 😀",
                       "to": "a@example.com, b@example.com", "cc": "=?bogus?x?broken?=", "date": "someday"}


@pytest.mark.parametrize("history", [
    "On Mon, 6 May 2024 at 10:00, Zoë Ü <\nzoe@example.com> wrote:\n\n> the plan\n> is late\n",
    "Le lun. 6 mai 2024 à 10:00, Zoë <zoe@example.com> a écrit :\n> le plan\n",
    "Am 06.05.2024 um 10:00 schrieb Zoë <zoe@example.com>:\n> der Plan\n",
    "On Monday, Zoë wrote:\nthe whole earlier message, not prefixed\n\nstill earlier text\n",
    "________________________________\nFrom: Zoë\nSent: Monday\nSubject: plan\n\nearlier text\n",
    "From: Zoë <zoe@example.com>\nSent: Monday, May 6, 2024 10:00\nTo: Ann\n\nearlier text\n",
])
def test_reply_history_forms_are_quoted(history: str) -> None:
    text = f"From: ann@example.com\nSubject: Re: plan\n\nNew words here.\n\n{history}"
    chunks = chunk(text)
    assert [c.metadata["part"] for c in chunks] == ["headers", "body", "quoted"]
    assert chunks[1].content.strip() == "New words here." and chunks[2].content == history


def test_interleaved_quotes_alternate_with_new_text() -> None:
    chunks = chunk("> question one\nanswer one\n>> older\n> question two\n\nanswer two\n")
    assert [(c.metadata["part"], c.content) for c in chunks] == [
        ("quoted", "> question one\n"), ("body", "answer one\n"), ("quoted", ">> older\n> question two\n"),
        ("body", "\nanswer two\n")]


@pytest.mark.parametrize(("tail", "signature"), [
    ("-- \nAnn Lee\nACME", "-- \nAnn Lee\nACME"), ("--\nAnn", "--\nAnn"),
    ("Sent from my iPhone", "Sent from my iPhone"), ("Best regards,\nAnn Lee\n+1 555 0100", None),
    ("Thanks!\nAnn", None), ("Cheers", None),
])
def test_signatures_are_split_off(tail: str, signature: str | None) -> None:
    signature = signature or tail
    chunks = chunk(f"Subject: s\n\nThe numbers are in the sheet.\n\n{tail}\n\n> old quote\n")
    assert [c.metadata["part"] for c in chunks] == ["headers", "body", "signature", "quoted"]
    assert chunks[2].content.strip() == signature and not indexed(chunks[2])


def test_a_sign_off_alone_or_followed_by_long_lines_stays_text() -> None:
    assert {c.metadata["part"] for c in chunk("Thanks,\nAnn")} == {"body"}
    long_line = "and then a long closing paragraph that keeps going well past sixty characters in length"
    assert {c.metadata["part"] for c in chunk(f"Words.\nThanks,\n{long_line}\n")} == {"body"}


def test_a_message_of_only_quotes_has_nothing_indexed() -> None:
    chunks = chunk("Subject: fwd\n\n> all\n> quoted\n")
    assert not any(indexed(c) for c in chunks)


def test_registers_itself_through_the_hook() -> None:
    found: list = []
    memtrove_register_chunkers(register=found.append)
    assert [type(c) for c in found] == [EmailChunker] and found[0].name == "email" and found[0].version == "1"


def test_a_thousand_message_thread() -> None:
    text = (THREAD + "\n") * 250
    chunks = chunk(text)
    assert chunks[-1].metadata["message_index"] == 999


# --- properties on generated threads -------------------------------------------------------------

WORDS = ["budget", "plan", "review", "ship", "the", "a", "we", "Zoë", "東京", "寿司", "😀", "👍🏽", "naïve", "e\u0301",
         "שלום", "data", "x", "friday", "42", "3.5", "it's", "(draft)", "team", "café", "über", "✓"]
NAMES = ["Ann Lee", "Zoë Ü", "李雷", "O'Neil", "bob"]


@dataclass
class Message:
    """A generated message and what the chunker must make of it."""

    text: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    quoted: list[tuple[int, int]] = field(default_factory=list)  # spans relative to the message
    new: list[tuple[int, int]] = field(default_factory=list)
    signature: list[tuple[int, int]] = field(default_factory=list)

    def add(self, text: str, kind: list[tuple[int, int]] | None = None) -> None:
        if kind is not None and text.strip():
            kind.append((len(self.text), len(self.text) + len(text)))
        self.text += text


words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)
lines = st.lists(words, min_size=1, max_size=6)


@st.composite
def header_values(draw, proven: bool) -> dict[str, str]:
    wanted = draw(st.lists(st.sampled_from(["from", "to", "cc", "date", "subject", "message_id"]), unique=True,
                           min_size=1))
    if proven:
        wanted = list(dict.fromkeys(["from", "date", *wanted]))
    values = {"from": f"{draw(st.sampled_from(NAMES))} <a@example.com>", "to": "team@example.com",
              "cc": f"{draw(st.sampled_from(NAMES))} <c@example.com>", "date": "Mon, 6 May 2024 10:00:00 +0200",
              "subject": draw(words), "message_id": f"<{draw(st.integers(0, 999))}@example.com>"}
    return {key: values[key] for key in wanted}


def render_headers(headers: dict[str, str], nl: str, fold: bool) -> str:
    out = []
    for key, value in headers.items():
        name = {"message_id": "Message-ID"}.get(key, key.capitalize())
        if key == "subject" and not value.isascii():
            value = f"=?utf-8?b?{base64.b64encode(value.encode()).decode()}?="
        elif fold and " " in value:
            head, _, rest = value.partition(" ")
            value = f"{head}{nl} {rest}"  # unfolding removes the line break, keeping the space
        out.append(f"{name}: {value}{nl}")
    return "".join(out)


@st.composite
def message(draw, nl: str, mbox: bool, proven: bool) -> Message:
    m = Message()
    if mbox:
        m.add(f"From a@example.com Mon May  6 10:00:00 2024{nl}")
    if mbox or proven or draw(st.booleans()):
        m.headers = draw(header_values(proven))
        m.add(render_headers(m.headers, nl, draw(st.booleans())) + nl)
    blocks = draw(st.lists(st.sampled_from(["new", "quote", "attribution"]), min_size=0 if m.headers else 1,
                           max_size=4))
    # a sign-off is a signature only after new text (alone it is the text)
    blocks += draw(st.lists(st.sampled_from(["signature", "sign-off"] if blocks[-1:] == ["new"] else ["signature"]),
                            max_size=1))
    blocks += draw(st.lists(st.sampled_from(["quote", "attribution", "outlook"]), max_size=2))
    for block in blocks:
        body = draw(lines)
        if block == "new":
            for line in body:
                m.add(line + nl, m.new)
        elif block == "quote":
            m.add("".join(f"{draw(st.sampled_from(['> ', '>> ', '>']))}{line}{nl}" for line in body), m.quoted)
        elif block == "attribution":
            m.add(f"On Mon, 6 May 2024 at 10:00, {draw(st.sampled_from(NAMES))} <a@example.com> wrote:{nl}"
                  + "".join(f"> {line}{nl}" for line in body), m.quoted)
        elif block == "outlook":
            m.add(f"-----Original Message-----{nl}From: Ann{nl}Sent: Monday{nl}{nl}" + nl.join(body) + nl, m.quoted)
            break  # an Outlook block runs to the end of the message
        elif block == "signature":
            m.add(f"-- {nl}" + nl.join(body) + nl, m.signature)
        elif block == "sign-off":
            m.add(f"Kind regards,{nl}{draw(st.sampled_from(NAMES))}{nl}", m.signature)
        m.add(nl)
    return m


@st.composite
def threads(draw) -> tuple[str, list[tuple[int, Message]]]:
    nl, mbox = draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans())
    messages = [draw(message(nl, mbox, proven=index > 0)) for index in range(draw(st.integers(1, 4)))]
    starts, text = [], ""
    for m in messages:
        starts.append(len(text))
        text += m.text
        if not m.text.endswith(nl + nl):
            text += nl  # a blank line before the next message
            m.text += nl
    return text, list(zip(starts, messages))


specs = st.builds(lambda target, overlap: ChunkSpec(target, min(overlap, target - 1), target),
                  st.integers(8, 120), st.integers(0, 16))
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.data_too_large])


def overlapping(chunks: list[Chunk], lo: int, hi: int) -> list[Chunk]:
    return [c for c in chunks if c.start_char < hi and c.end_char > lo]


@PROPERTY
@given(threads(), specs)
def test_generated_threads(thread: tuple[str, list[tuple[int, Message]]], spec: ChunkSpec) -> None:
    text, messages = thread
    tokenizer = SimpleTokenizer()
    chunks = chunk(text, spec, tokenizer)
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert EmailChunker().chunk(text, spec, tokenizer) == chunks
    assert all(c.token_count <= spec.target_tokens for c in chunks)
    assert all(tokenizer.count(c.content) <= c.token_count for c in chunks)
    for c in chunks:  # inside one message, with that message's headers
        index = max(i for i, (start, _) in enumerate(messages) if start <= c.start_char)
        start, m = messages[index]
        assert c.end_char <= start + len(m.text), "a chunk spans two messages"
        assert c.metadata["message_index"] == index and c.metadata["headers"] == m.headers
    for start, m in messages:
        for kind, part in ((m.quoted, "quoted"), (m.signature, "signature"), (m.new, "body")):
            for lo, hi in kind:
                found = overlapping(chunks, start + lo, start + hi)
                assert {c.metadata["part"] for c in found} == {part}, (part, text[start + lo:start + hi])
                assert all(indexed(c) == (part == "body") for c in found)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(threads(), specs)
def test_generated_threads_with_cl100k(thread: tuple[str, list[tuple[int, Message]]], spec: ChunkSpec) -> None:
    text, messages = thread
    chunks = chunk(text, spec, cl100k())
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert all(c.token_count <= spec.target_tokens for c in chunks)
    assert max(c.metadata["message_index"] for c in chunks) == len(messages) - 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["From a b\n", "From: x\n", "Date: d\n", "Sent: s\n", "\n", "\r\n", "> q\n", "-- \n",
                                 "On a wrote:\n", "On a\n", "b> wrote:\n", "-----Original Message-----\n", "_" * 12,
                                 " folded\n", "Thanks,\n", "word ", "😀", "e\u0301", "東京", "\r"]),
                max_size=40).map("".join), specs)
def test_any_mix_of_email_syntax_rebuilds_exactly(text: str, spec: ChunkSpec) -> None:
    chunks = chunk(text, spec)
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert all(c.token_count <= spec.target_tokens for c in chunks)
