"""Email and chat chunking throughput on ~10 MB (MEMTROVE_BENCH_FULL=1; 1 MB otherwise), against one
tiktoken encode of the same text: the structure-aware chunkers must stay within 3x of it (asserted
under ./scripts/bench; the smoke run checks the chunks and reports the ratio)."""

from __future__ import annotations

import random

import pytest

from adapters.text.tokenizers import TiktokenTokenizer
from domain.chunk_checks import chunk_problem
from domain.model import ChunkSpec
from domain.ports import Chunker
from plugins.chunkers.chat import ChatChunker
from plugins.chunkers.email import EmailChunker
from tests.benchmarks.conftest import assert_timing, best_seconds, measure, size

SPEC = ChunkSpec(target_tokens=900, overlap_tokens=100, single_piece_max_tokens=1200)  # the openai profile's
TOPICS = ["budget", "hiring", "launch", "migration", "incident", "contract", "roadmap", "travel", "security",
          "pricing", "onboarding", "database", "latency", "invoice", "vendor", "audit", "東京", "café 😀"]
PEOPLE = ["Maria López", "Jörg Schmidt", "Priya Nair", "Ann Lee", "Bob Smith", "李雷"]


def sentence(rng: random.Random) -> str:
    return (f"The {rng.choice(TOPICS)} team reviewed the {rng.choice(TOPICS)} plan for "
            f"{rng.choice(TOPICS)} on day {rng.randrange(1, 400)}.")


def paragraph(rng: random.Random, lines: int) -> list[str]:
    return [" ".join(sentence(rng) for _ in range(rng.randint(1, 3))) for _ in range(lines)]


def mbox_thread(rng: random.Random, chars: int) -> str:
    """An mbox of replies: new text, the previous message quoted, now and then a signature or an Outlook block."""
    parts, previous, total, n = [], [], 0, 0
    while total < chars:
        who = rng.choice(PEOPLE)
        new = paragraph(rng, rng.randint(2, 40))
        body = "\n".join(new) + "\n\n"
        if previous and rng.random() < 0.7:
            body += f"On Mon, 6 May 2024 at 10:{n % 60:02d}, {who} <x@example.org> wrote:\n"
            body += "".join(f"> {line}\n" for line in previous)
        elif previous:
            body += "-----Original Message-----\nFrom: x@example.org\nSent: Monday\n\n" + "\n".join(previous) + "\n"
        if rng.random() < 0.5:
            body += f"\n-- \n{who}\nStaff Engineer\n"
        message = (f"From x@example.org Mon May  6 10:00:00 2024\nFrom: {who} <x@example.org>\n"
                   f"To: team@example.org\nDate: Mon, 6 May 2024 10:{n % 60:02d}:00 +0200\n"
                   f"Subject: Re: {rng.choice(TOPICS)}\nMessage-ID: <{n}@example.org>\n\n{body}\n")
        parts.append(message)
        total += len(message)
        previous, n = new, n + 1
    return "".join(parts)[:chars]


def chat_log(rng: random.Random, chars: int) -> str:
    """Stamped turns, some with continuation lines."""
    parts, total, n = [], 0, 0
    while total < chars:
        lines = paragraph(rng, rng.choice([1, 1, 1, 2, 4]))
        turn = f"[2024-05-06 {n // 60 % 24:02d}:{n % 60:02d}] {rng.choice(PEOPLE)}: " + "\n".join(lines) + "\n"
        parts.append(turn)
        total, n = total + len(turn), n + 1
    return "".join(parts)[:chars]


@pytest.mark.parametrize(("kind", "chunker", "build"), [("email", EmailChunker(), mbox_thread),
                                                        ("chat", ChatChunker(), chat_log)], ids=["email", "chat"])
def test_chunking_10mb_vs_one_tiktoken_encode(benchmark, report, kind: str, chunker: Chunker, build) -> None:
    text = build(random.Random(7), size(10_000_000, 1_000_000))
    tokenizer = TiktokenTokenizer()
    chunks = chunker.chunk(text, SPEC, tokenizer)
    assert chunk_problem(text, chunks) is None
    rounds = size(3, 1)
    encode_s = best_seconds(lambda: tokenizer._encoding.encode_ordinary(text), rounds)
    chunk_s = min(measure(benchmark, lambda: chunker.chunk(text, SPEC, tokenizer), rounds))  # the quietest rounds
    report(kind=kind, chars=len(text), chunks=len(chunks), encode_s=round(encode_s, 3), chunk_s=round(chunk_s, 3),
           ratio=round(chunk_s / encode_s, 2), target=3)
    assert_timing(chunk_s <= 3 * encode_s, f"chunking took {chunk_s / encode_s:.2f} encodes (target 3)")
