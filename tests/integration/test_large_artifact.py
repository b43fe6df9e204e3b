"""A 10 MB artifact through the real container (real SQLite, embedded Chroma; HashEmbedder for speed).

It must ingest in bounded memory and linear time, come back byte-for-byte, and one character more
must be refused before anything is computed or stored.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import psutil
import pytest
from dependency_injector import providers

from adapters.memory.basics import HashEmbedder
from config.settings import Settings
from domain.chunking import content_hash
from domain.errors import ValidationError
from domain.artifacts.input import IngestRequest
from entrypoints.runtime import Runtime

pytestmark = pytest.mark.slow

TEN_MB = 10_000_000
# Peak RSS growth allowed for the whole ingest. Measured ~230 MiB on the reference box (Python 3.11, 2 cores,
# ~2.1 M tokens, ~12.3 k chunks): the text's ~11.5 MB of overlapping chunks, the token offsets while
# chunking, the vectors and the Chroma/SQLite writes. The bound leaves ~3x headroom for allocator noise
# and library changes while still catching a design that keeps per-chunk copies or all vectors around.
RSS_GROWTH_LIMIT = 768 * 2**20

FIRST = ["Marta", "Jonas", "Aiko", "Zoë", "Tomás", "Priya", "Olu", "Ingrid", "Mehmet", "Chen", "Élodie", "Sven"]
TEAM = ["the platform team", "finance", "the Oslo warehouse crew", "legal", "customer support", "the data group",
        "procurement", "the São Paulo office", "facilities", "the mobile squad"]
VERB = ["reviewed", "approved", "postponed", "rewrote", "escalated", "shipped", "audited", "split", "priced",
        "documented", "migrated", "benchmarked", "rejected", "summarised"]
THING = ["the quarterly budget", "the vendor contract", "the incident report", "the onboarding checklist",
         "the API rate limits", "the freight schedule", "the backup policy", "the hiring plan", "the release notes",
         "the security questionnaire", "the pricing page", "the cold-storage inventory", "the travel policy"]
WHEN = ["on Monday", "before the board meeting", "after the outage", "during the offsite", "late on Friday",
        "ahead of the audit", "in the second sprint", "over the holidays", "right after lunch", "by the deadline"]
WHY = ["because the numbers did not add up", "so that customers are notified earlier", "to cut shipping costs",
       "after two complaints from the auditors", "since the old process kept failing", "to meet the new regulation",
       "as the team had asked for weeks", "because the supplier raised prices by {n}%"]


def generate_text(length: int, seed: int = 10) -> str:
    """Varied English prose with names, numbers, some accents and paragraph breaks; exactly ``length`` chars."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    sentence = 0
    while size < length:
        sentence += 1
        why = rng.choice(WHY).format(n=rng.randint(2, 40))
        text = (f"{rng.choice(FIRST)} from {rng.choice(TEAM)} {rng.choice(VERB)} {rng.choice(THING)} "
                f"{rng.choice(WHEN)} {why}; ticket {rng.randint(1000, 99999)} tracks it.")
        text += "\n\n" if sentence % 7 == 0 else " "
        parts.append(text)
        size += len(text)
    return "".join(parts)[:length]


class PeakRss:
    """Samples this process's resident set size every few milliseconds; ``peak`` is the largest seen."""

    def __init__(self, interval: float = 0.005) -> None:
        self._process = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self.baseline = self._process.memory_info().rss
        self.peak = self.baseline
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            time.sleep(self._interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)

    @property
    def growth(self) -> int:
        return self.peak - self.baseline


@pytest.fixture(scope="module")
def text() -> str:
    """Exactly 10,000,000 bytes of UTF-8 (the limit counts bytes), with non-ASCII characters in it."""
    generated = generate_text(TEN_MB).encode()[:TEN_MB].decode(errors="ignore")
    generated += "." * (TEN_MB - len(generated.encode()))
    assert len(generated.encode()) == TEN_MB and not generated.isascii()
    return generated


@pytest.fixture(scope="module")
def embedder() -> HashEmbedder:
    return HashEmbedder(dimensions=32, max_tokens=256)  # 256 keeps the local profile's 200/32-token chunks


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, embedder: HashEmbedder) -> Iterator[Runtime]:
    rt = Runtime(Settings(memtrove_data_dir=tmp_path_factory.mktemp("large") / "data", memtrove_warmup=False))
    rt.app.adapters.embedder.override(providers.Object(embedder))
    rt.start()
    rt.ensure_ready()
    rt.app.adapters.tokenizer().count("warm up")  # load the ranks before measuring
    yield rt
    rt.shutdown()


@pytest.fixture(scope="module")
def ingested(runtime: Runtime, text: str) -> dict[str, object]:
    started = time.perf_counter()
    with PeakRss() as rss:
        result = runtime.app.use_cases.ingest_artifact()(IngestRequest(
            artifact_type="doc", source_system="drive", source_id="ten-megabytes", content=text,
            title="Ten megabytes of meeting minutes"))
    elapsed = time.perf_counter() - started
    print(f"\n10 MB ingest: {elapsed:.1f} s, {result.artifact.num_chunks} chunks, "
          f"{result.artifact.token_count} tokens, peak RSS growth {rss.growth / 2**20:.0f} MiB "
          f"(baseline {rss.baseline / 2**20:.0f} MiB, peak {rss.peak / 2**20:.0f} MiB)")
    return {"result": result, "elapsed": elapsed, "growth": rss.growth}


def test_ten_megabytes_ingest_in_bounded_memory_and_time(ingested: dict[str, object], runtime: Runtime,
                                                         text: str) -> None:
    result = ingested["result"]
    assert result.status == "ingested" and result.artifact.is_chunked  # type: ignore[attr-defined]
    artifact = result.artifact  # type: ignore[attr-defined]
    assert artifact.content_hash == content_hash(text)
    assert artifact.num_chunks == len(result.chunks) > 10_000  # type: ignore[attr-defined]
    assert ingested["growth"] < RSS_GROWTH_LIMIT, (
        f"peak RSS grew by {ingested['growth'] / 2**20:.0f} MiB (limit {RSS_GROWTH_LIMIT / 2**20:.0f} MiB)")
    runtime.app.use_cases.sync_vectors().catch_up()  # what a search does first
    store, vectors = runtime.app.adapters.store(), runtime.app.adapters.vectors()
    assert store.committed_versions() == {artifact.id: artifact.version} and store.pending_versions() == []
    owners = set(vectors.all_vectors("chunk").values())
    assert owners == {c.id for c in result.chunks}  # type: ignore[attr-defined]


def test_ten_megabytes_come_back_byte_for_byte(ingested: dict[str, object], runtime: Runtime, text: str) -> None:
    artifact = ingested["result"].artifact  # type: ignore[attr-defined]
    view = runtime.app.use_cases.get_artifact()(artifact.id, include_content=True, include_chunks=True)
    assert view.content is not None and len(view.content.encode()) == TEN_MB
    assert view.content == text
    chunks = view.chunks or []
    assert chunks[0].start_char == 0 and chunks[-1].end_char == len(text)
    assert all(a.start_char < b.start_char <= a.end_char for a, b in zip(chunks, chunks[1:]))
    assert all(text[c.start_char:c.end_char] == c.content for c in chunks[::97])


def test_one_character_more_is_refused_without_touching_the_stores(ingested: dict[str, object], runtime: Runtime,
                                                                   embedder: HashEmbedder, text: str) -> None:
    store, vectors = runtime.app.adapters.store(), runtime.app.adapters.vectors()
    before = (store.committed_versions(), store.pending_versions(), store.recent(50),
              vectors.count("chunk"), vectors.count("artifact"), len(embedder.calls))
    too_big = text + "."
    assert len(too_big.encode()) == TEN_MB + 1
    for source_id in ("ten-megabytes", "one-more", None):  # a replace, a new source, no source
        with pytest.raises(ValidationError) as refused:
            runtime.app.use_cases.ingest_artifact()(IngestRequest(
                artifact_type="doc", source_system="drive", source_id=source_id, content=too_big))
        assert refused.value.message.startswith("Content exceeds maximum size of 10MB")
        assert refused.value.field == "content"
    after = (store.committed_versions(), store.pending_versions(), store.recent(50),
             vectors.count("chunk"), vectors.count("artifact"), len(embedder.calls))
    assert after == before
