"""A 10 MB Markdown document through MCP stdio with the local model: progress, the call budget, the background job.

Under ./scripts/bench the document is 10,000,000 bytes (~15-20 minutes on a 2-core box) and the
server keeps its default call budget; the ordinary test run sends ~100 KB with
MEMTROVE_CALL_BUDGET=3, so the "indexing" answer, the progress notifications and the background
job all run there too. artifact_ingest is called with a progress callback (the client sends a
progressToken); the call returns (status "indexing" past the budget, or the result); artifact_get
is then polled until the version is committed. Figures: wall time (call to committed, to the poll
interval), chunks, chunks/s beside the local model's own rate on the same document's chunks in this
process (same run, after the ingest), progress notifications, the call's own duration, the server's
peak RSS.
Always checked: progress only increases, the artifact becomes searchable (a passage from near its
end is found by hybrid_search) and its content round-trips (artifact_get include_content).
"""

from __future__ import annotations

import functools
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from anyio.from_thread import start_blocking_portal

from tests.benchmarks.conftest import FULL, measure, size
from tests.support.mcp_procs import stdio_session

pytestmark = pytest.mark.slow

DOC_BYTES = size(10_000_000, 50_000)
ENV = {} if FULL else {"MEMTROVE_CALL_BUDGET": "3"}
POLL_EVERY = size(5.0, 0.5)  # seconds between artifact_get polls
JOB_TIMEOUT = size(5_400.0, 900.0)
MARKER = ("The quartermaster reconciled the Zanzibar obsidian ledger against the Halvorsen "
          "ferry manifests before the auditors arrived.")

WORDS = ("system service request response latency budget cache index query storage replica cluster "
         "deployment rollout migration schema table column record batch worker queue retry timeout "
         "client server session token user team customer incident postmortem review design proposal "
         "decision tradeoff metric dashboard alert threshold capacity throughput memory disk network "
         "region zone failover backup restore snapshot version release feature flag experiment result "
         "the a an of to in for on with by from and or but when while after before because which that "
         "this these those is are was were be been has have had will would can could should must may "
         "quickly carefully rarely often always never usually eventually gradually").split()
LANGS = ["python", "bash", "sql", "yaml", "json"]


def paragraph(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 7)):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 22))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), f"`{rng.choice(WORDS)}_{rng.randrange(1000)}`")
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), f"**{rng.choice(WORDS)}**")
        sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"]))
    return " ".join(sentences)


def code_block(rng: random.Random) -> str:
    lang = rng.choice(LANGS)
    lines = []
    for n in range(rng.randint(4, 14)):
        name, value = rng.choice(WORDS), rng.randrange(10_000)
        lines.append({"python": f"    {name}_{n} = compute({name!r}, limit={value})",
                      "bash": f"memtrove {name} --limit {value} | tee {name}-{n}.log",
                      "sql": f"SELECT {name}, count(*) FROM {rng.choice(WORDS)}_{n} WHERE id > {value};",
                      "yaml": f"{name}_{n}: {value}",
                      "json": f'  "{name}_{n}": {value},'}[lang])
    if lang == "python":
        lines.insert(0, f"def {rng.choice(WORDS)}_{rng.randrange(100)}():")
    return f"```{lang}\n" + "\n".join(lines) + "\n```"


def listing(rng: random.Random) -> str:
    numbered = rng.random() < 0.4
    items = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(rng.randint(3, 8))]
    return "\n".join(f"{n + 1}. {item}" if numbered else f"- {item}" for n, item in enumerate(items))


def table(rng: random.Random) -> str:
    head = [rng.choice(WORDS).title() for _ in range(3)]
    rows = [f"| {rng.choice(WORDS)} | {rng.randrange(1000)} | {rng.choice(WORDS)} |" for _ in range(rng.randint(2, 6))]
    return "\n".join([f"| {' | '.join(head)} |", "| --- | --- | --- |", *rows])


def markdown(total_bytes: int, seed: int = 17) -> str:
    """A deterministic Markdown document of exactly ``total_bytes`` (ASCII) bytes, with MARKER near its end."""
    rng = random.Random(seed)
    parts, marked, chapter = ["# Operations handbook", paragraph(rng)], False, 0
    length = sum(len(p) + 2 for p in parts)
    while length < total_bytes:
        if not marked and length > total_bytes * 0.96:
            block, marked = f"{MARKER} {paragraph(rng)}", True
        elif rng.random() < 0.04:
            chapter += 1
            block = f"# Chapter {chapter}: {rng.choice(WORDS).title()} {rng.choice(WORDS)}"
        elif rng.random() < 0.12:
            block = f"## {rng.choice(WORDS).title()} {rng.choice(WORDS)} {rng.randrange(100)}"
        else:
            block = rng.choices([paragraph, listing, code_block, table], weights=[60, 18, 14, 8])[0](rng)
        parts.append(block)
        length += len(block) + 2
    text = "\n\n".join(parts)[:total_bytes]
    assert MARKER in text[-int(total_bytes * 0.06):] and len(text.encode()) == total_bytes
    return text


def raw_embedding_rate(text: str, sample: int = 256) -> tuple[int, float]:
    """The reference, in this process: the same document cut by the Markdown chunker, ``sample`` of its
    chunks (spread over it, with their heading paths as the ingest embeds them) embedded by the local
    model in one call, as the ingest's batches are. Returns (chunks the cut made, chunks/s embedding)."""
    from adapters.embedders.local import OnnxMiniLMEmbedder
    from adapters.text.tokenizers import TiktokenTokenizer
    from config.settings import Settings
    from domain.chunk_checks import situating_text
    from plugins.chunkers.markdown import MarkdownChunker

    embedder = OnnxMiniLMEmbedder()
    spec = Settings(memtrove_embedder="local").chunk_spec(embedder.profile)
    chunks = MarkdownChunker().chunk(text, spec, TiktokenTokenizer())
    step = max(1, len(chunks) // sample)
    texts = [f"{situating_text(c.metadata)}\n{c.content}".lstrip("\n") for c in chunks[::step][:sample]]
    embedder.embed_documents(texts[:8])  # load the model
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return len(chunks), len(texts) / (time.perf_counter() - started)


class PeakRss:
    """Samples a process's RSS in a thread; ``peak_mb`` also reads the kernel's high-water mark."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.pid, self.every, self.max_rss = pid, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        process = psutil.Process(self.pid)
        while not self._stop.wait(self.every):
            try:
                self.max_rss = max(self.max_rss, process.memory_info().rss)
            except psutil.Error:
                return

    def peak_mb(self) -> float:
        self._stop.set()
        self._thread.join()
        hwm = 0
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
        except OSError:
            pass
        return round(max(self.max_rss, hwm) / 2**20, 1)


def server_pid(known: set[int]) -> int:
    """The ``memtrove serve`` process the stdio client just started (a child of this one)."""
    new = [p for p in psutil.Process().children(recursive=True)
           if p.pid not in known and "serve" in " ".join(p.cmdline())]
    assert len(new) == 1, [p.cmdline() for p in new]
    return new[0].pid


def test_large_markdown_ingest_over_mcp(benchmark, report, tmp_path: Path) -> None:
    text = markdown(DOC_BYTES)
    stderr_path = tmp_path / "server-stderr.log"
    known = {p.pid for p in psutil.Process().children(recursive=True)}
    with start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(stdio_session(tmp_path / "data", ENV, stderr_path=stderr_path)) as client:
        def call(name: str, args: dict[str, Any], **options: Any) -> dict[str, Any]:
            result = portal.call(functools.partial(client.call_tool, name, args, **options))
            assert not result.is_error, (str(result.content)[:2000], stderr_path.read_text()[-3000:])
            return dict(result.structured_content or {})

        call("hybrid_search", {"query": "warm up the model", "limit": 1})  # opens the stores, loads the model
        pid = server_pid(known)
        rss_before_mb = round(psutil.Process(pid).memory_info().rss / 2**20, 1)
        rss = PeakRss(pid)
        progress: list[tuple[float, float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((time.perf_counter(), done, total, message))

        outcome: dict[str, Any] = {"polls": []}

        def ingest_until_committed() -> None:
            started = outcome["started"] = time.perf_counter()
            answer = call("artifact_ingest", {"artifact_type": "doc", "source_system": "bench",
                                              "source_id": "big.md", "title": "A large Markdown document",
                                              "content": text}, progress_callback=on_progress)
            outcome.update(answer=answer, call_s=time.perf_counter() - started)
            assert answer["status"] in ("indexing", "ingested"), answer
            art_id = answer["artifact_id"]
            while True:
                got = call("artifact_get", {"artifact_id": art_id})
                outcome["polls"].append((got["status"], got.get("chunks_done")))
                if got["status"] == "indexed":
                    break
                assert got["status"] == "indexing", got  # never "failed"
                assert time.perf_counter() - started < JOB_TIMEOUT, f"not committed: {outcome['polls'][-3:]}"
                time.sleep(POLL_EVERY)
            outcome.update(artifact=got, wall_s=time.perf_counter() - started)

        measure(benchmark, ingest_until_committed, 1)
        peak_mb = rss.peak_mb()
        art_id = outcome["artifact"]["artifact_id"]
        found = call("hybrid_search", {"query": MARKER, "limit": 5})
        back = call("artifact_get", {"artifact_id": art_id, "include_content": True})

    cut_chunks, raw_rate = raw_embedding_rate(text)
    answer, meta = outcome["answer"], outcome["artifact"]["metadata"]
    # (a busy machine may spend the whole budget cutting the chunks: no progress before they are cut)
    assert progress or not answer.get("chunks_total"), "no progress notification arrived (the client sent a progressToken)"
    values = [p[1] for p in progress]  # MCP: each above the last, and only once the chunks are cut (a total)
    assert values == sorted(values) and len(set(values)) == len(values), values
    assert all(total and done <= total for _, done, total, _ in progress), progress
    done_in_polls = [d for s, d in outcome["polls"] if s == "indexing" and d is not None]
    assert done_in_polls == sorted(done_in_polls), done_in_polls
    hits = [r for r in found["results"] if r.get("artifact_id") == art_id or r["id"] == art_id]
    assert hits and any("Zanzibar obsidian ledger" in r["snippet"] for r in hits), found  # a hit shows its match
    assert back["content"] == text
    chunks = int(meta["num_chunks"])
    report(bytes=DOC_BYTES, chunks=chunks, chunker=meta["chunker"], call_budget_s=ENV.get("MEMTROVE_CALL_BUDGET", "20"),
           call_returned=answer["status"], call_s=round(outcome["call_s"], 2),
           chunks_done_at_return=answer.get("chunks_done"), chunks_total=answer.get("chunks_total"),
           progress_notifications=len(progress), first_progress_s=round(progress[0][0] - outcome["started"], 2) if progress else None,
           wall_s=round(outcome["wall_s"], 1), poll_every_s=POLL_EVERY,
           chunks_per_s=round(chunks / outcome["wall_s"], 2), raw_embedding_chunks_per_s=round(raw_rate, 2),
           ingest_over_raw_rate=round(chunks / outcome["wall_s"] / raw_rate, 2), chunks_cut_here=cut_chunks,
           polls=len(outcome["polls"]),
           progress_values_in_polls=len(set(done_in_polls)), server_rss_before_ingest_mb=rss_before_mb,
           server_peak_rss_mb=peak_mb, load_1min=round(os.getloadavg()[0], 1))
