"""Local embedder throughput (texts/s) on short texts and on 256-word-piece texts."""

from __future__ import annotations

import random

from adapters.embedders.local import OnnxMiniLMEmbedder
import statistics

from tests.benchmarks.conftest import measure, size

WORDS = ("memory agent search vector lexical fusion chunk window profile store history turn artifact "
         "python deadline meeting budget travel coffee preference decision project").split()


def texts(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(n)]


def _throughput(benchmark, report, batch: list[str], label: str) -> None:
    embedder = OnnxMiniLMEmbedder()
    embedder.embed_query("load the model outside the measurement")
    lengths = [embedder.count_tokens(t) for t in batch]
    assert max(lengths) <= embedder.profile.max_tokens
    median = statistics.median(measure(benchmark, lambda: embedder.embed_documents(batch), size(5, 1)))
    report(kind=label, texts=len(batch), word_pieces_max=max(lengths),
           texts_per_s=round(len(batch) / median, 1))


def test_short_texts(benchmark, report) -> None:
    _throughput(benchmark, report, texts(size(512, 64), 8, 1), "short (~10 word pieces)")


def test_full_window_texts(benchmark, report) -> None:
    counter = OnnxMiniLMEmbedder()
    full = []
    for text in texts(size(256, 32), 300, 2):
        words = text.split()
        while counter.count_tokens(" ".join(words)) > counter.profile.max_tokens:
            words.pop()
        full.append(" ".join(words))
    _throughput(benchmark, report, full, "256 word pieces")
