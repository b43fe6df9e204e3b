"""Passages in long documents: paraphrased questions over Python's library documentation.

Every document of the question set's corpus (reStructuredText sources from Debian's python3-doc)
goes in as it is with ``artifact_ingest`` (type ``doc``, defaults otherwise); each question is a
``hybrid_search`` (limit 10, defaults). A result answers when the passage it returns holds the
question's answer passage (a verbatim quote; a quote cut by the passage's boundary counts when the
passage holds at least half of it): a chunk hit's passage is the document's text from its
``start_char`` to its ``end_char`` (the second look's passage), else its chunk's text. Scores:
hit@1/5/10 (answering result in the first k), MRR@10, the right document in the first 5 and the
mean characters of the results judged, for memtrove and the baselines in the same run, each over
the dev and the test split, plus BM25 over 1,500-character windows computed here without a server
(several windows per document allowed), judged the same way: the reference a plain keyword engine
gives. "memtrove hybrid, chunks as retrieved" is memtrove's default profile with the second look
off (``second_look: false``): the chunks as the search retrieved them, as before issue 43.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (BASELINES, BENCH_PROFILES, RERANK_OFF, call, latency, mean, per_second, run_and_report, server,
                          server_peak_rss_mb)
from domain.search.retrieval import DEFAULT_PROFILE, PROFILES, SIGNALS

QUESTIONS = Path(__file__).resolve().parent / "data" / "python_docs_questions.json"
DOCS = Path("/usr/share/doc/python3.11/html/_sources/library")
HITS = (1, 5, 10)
_DEFAULT = PROFILES[DEFAULT_PROFILE]
# memtrove's default profile with the second look at found documents off (the chunks as retrieved).
AS_RETRIEVED = {"bench-as-retrieved": {**{s: _DEFAULT.of(s) for s in SIGNALS}, "k": _DEFAULT.k,
                                       "context": _DEFAULT.context, "second_look": False}}
CONFIGS: dict[str, dict[str, Any]] = {"memtrove hybrid": {}, **RERANK_OFF,
                                      "memtrove hybrid, chunks as retrieved": {"profile": "bench-as-retrieved"},
                                      **BASELINES}
SPLITS = ("dev", "test")
WINDOW = 1_500
WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    doc: str
    text: str
    answer: str
    split: str


def flat(text: str) -> str:
    return " ".join(text.split())


def load_questions(path: Path, split: str | None = None) -> tuple[list[str], list[Question]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = [Question(q["id"], q["doc"], q["question"], q["answer"], q.get("split", "dev"))
                 for q in data["questions"] if split in (None, "all", q.get("split", "dev"))]
    return list(data["corpus"]), questions


def answers(text: str, answer: str) -> bool:
    """Does ``text`` hold the answer passage (or at least half of it, where a chunk boundary cut it)?"""
    body, quote = flat(text), flat(answer)
    if quote in body:
        return True
    least = max(30, len(quote) // 2)
    return any(body.endswith(quote[:n]) or body.startswith(quote[-n:]) for n in range(len(quote) - 1, least - 1, -1))


@dataclass
class PassageScores:
    hits: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in HITS})
    reciprocal: list[float] = field(default_factory=list)
    right_document: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    characters: list[float] = field(default_factory=list)  # each judged result's text

    def add(self, ranked: Sequence[tuple[str, str]], question: Question) -> None:
        """``ranked``: (document, text) of each result, best first."""
        first = next((rank for rank, (_, text) in enumerate(ranked[:10], 1) if answers(text, question.answer)), None)
        self.characters += [float(len(text)) for _, text in ranked[:10]]
        for k in HITS:
            self.hits[k].append(float(first is not None and first <= k))
        self.reciprocal.append(1.0 / first if first else 0.0)
        self.right_document.append(float(any(doc == question.doc for doc, _ in ranked[:5])))

    def summary(self) -> dict[str, Any]:
        return {"questions": len(self.reciprocal), **{f"hit@{k}": mean(v) for k, v in self.hits.items()},
                "mrr@10": mean(self.reciprocal), "document@5": mean(self.right_document),
                "characters": round(mean(self.characters)), "latency_ms": latency(self.latency_ms)}


class WindowBM25:
    """Okapi BM25 (k1 1.2, b 0.75) over fixed 1,500-character windows of each document, half-overlapping."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.windows: list[tuple[str, str, Counter[str]]] = []
        for name, text in docs.items():
            for start in range(0, max(1, len(text) - WINDOW // 2), WINDOW // 2):
                piece = text[start:start + WINDOW]
                self.windows.append((name, piece, Counter(w.lower() for w in WORD.findall(piece))))
        self.df: Counter[str] = Counter(w for _, _, terms in self.windows for w in terms)
        self.avg = sum(sum(t.values()) for _, _, t in self.windows) / max(1, len(self.windows))

    def search(self, query: str, limit: int = 10) -> list[tuple[str, str]]:
        n = len(self.windows)
        words = {w.lower() for w in WORD.findall(query)}
        scored: list[tuple[float, int]] = []
        for i, (_, _, terms) in enumerate(self.windows):
            length = sum(terms.values())
            score = 0.0
            for w in words:
                if tf := terms.get(w):
                    idf = math.log(1 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5))
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / self.avg))
            if score:
                scored.append((score, i))
        return [(self.windows[i][0], self.windows[i][1]) for _, i in sorted(scored, reverse=True)[:limit]]


async def run(corpus: Sequence[str], questions: Sequence[Question], docs_dir: Path,
              configs: dict[str, dict[str, Any]], data_dir: Path, log: Any = None) -> dict[str, Any]:
    say = log or (lambda _msg: None)
    texts = {name: (docs_dir / name).read_text(encoding="utf-8") for name in corpus}
    scores = {name: {split: PassageScores() for split in ("all", *SPLITS)} for name in configs}
    ingest_ms: list[float] = []
    doc_of: dict[str, str] = {}
    text_of: dict[str, str] = {}  # result id -> the text it stands for
    chunks = 0
    fresh = False  # some document was stored in this run (not all found stored before)
    weights = {**json.loads(os.environ.get("MEMTROVE_SEARCH_WEIGHTS") or "{}"), **BENCH_PROFILES, **AS_RETRIEVED}
    async with server(data_dir, {"MEMTROVE_SEARCH_WEIGHTS": json.dumps(weights)}) as client:
        for name, text in texts.items():
            started = time.perf_counter()
            stored = await call(client, "artifact_ingest", artifact_type="doc", source_system="python-docs",
                                source_id=f"library/{name}", title=name.removesuffix(".rst.txt"), content=text)
            ingest_ms.append((time.perf_counter() - started) * 1000)
            fresh = fresh or stored.get("status") != "unchanged"
            doc_of[stored["artifact_id"]] = name
            text_of[stored["artifact_id"]] = text
            # Hits show a snippet: which passage a hit stands for is read from its chunk's offsets.
            view = await call(client, "artifact_get", artifact_id=stored["artifact_id"], include_chunks=True)
            for chunk in view.get("chunks") or []:
                text_of[chunk["chunk_id"]] = text[chunk["start_char"]:chunk["end_char"]]
                chunks += 1
        say(f"stored {len(texts)} documents ({sum(map(len, texts.values())):,} characters, {chunks} chunks)")
        for config, extra in configs.items():
            for question in questions:
                started = time.perf_counter()
                found = await call(client, "hybrid_search", query=question.text[:500], limit=10, **extra)
                elapsed = (time.perf_counter() - started) * 1000
                ranked = [(doc_of.get(h.get("artifact_id", ""), ""), passage_text(h, text_of))
                          for h in found.get("results", [])]
                for split in ("all", question.split):
                    scores[config][split].latency_ms.append(elapsed)
                    scores[config][split].add(ranked, question)
            say(f"{config}: {len(questions)} questions")
        peak_rss = server_peak_rss_mb()
    reference = {split: PassageScores() for split in ("all", *SPLITS)}
    bm25 = WindowBM25(texts)
    for question in questions:
        started = time.perf_counter()
        ranked = bm25.search(question.text)
        elapsed = (time.perf_counter() - started) * 1000
        for split in ("all", question.split):
            reference[split].latency_ms.append(elapsed)
            reference[split].add(ranked, question)
    return {
        "protocol": "passages",
        "documents": len(texts), "characters": sum(map(len, texts.values())), "chunks": chunks,
        "questions": len(questions), "splits": dict(Counter(q.split for q in questions)),
        "artifact_ingest_ms": latency(ingest_ms),
        "chunks_per_second": per_second(chunks, ingest_ms) if fresh else 0.0,
        "server_peak_rss_mb": peak_rss,
        "results": {name: summaries(s) for name, s in {**scores, "BM25 1,500-char windows": reference}.items()},
    }


def summaries(scores: dict[str, PassageScores]) -> dict[str, Any]:
    """All questions' scores, with each split's under ``splits`` (those it has questions of)."""
    return {**scores["all"].summary(),
            "splits": {split: scores[split].summary() for split in SPLITS if scores[split].reciprocal}}


def passage_text(hit: dict[str, Any], text_of: dict[str, str]) -> str:
    """The text a result stands for: its document's text from ``start_char`` to ``end_char`` when it
    gives them (a passage), else its chunk's or its artifact's text (by id)."""
    start, end, document = hit.get("start_char"), hit.get("end_char"), hit.get("artifact_id")
    if isinstance(start, int) and isinstance(end, int) and document in text_of:
        return text_of[document][start:end]
    return text_of.get(hit["id"], "")


def table(report: dict[str, Any]) -> str:
    head = f"{'configuration':<38}" + "".join(f"{f'hit@{k}':>8}" for k in HITS) + \
        f"{'MRR@10':>8}{'doc@5':>8}{'chars':>7}{'p50 ms':>9}{'p95 ms':>9}"
    lines: list[str] = []
    for split in ("all", *SPLITS):
        rows = {name: r if split == "all" else r.get("splits", {}).get(split) for name, r in report["results"].items()}
        if not all(rows.values()):
            continue
        lines += [f"{split} ({next(iter(rows.values()))['questions']} questions)", head, "-" * len(head)]
        for name, r in rows.items():
            lines.append(f"{name:<38}" + "".join(f"{r[f'hit@{k}']:>8.3f}" for k in HITS)
                         + f"{r['mrr@10']:>8.3f}{r['document@5']:>8.3f}{r.get('characters', 0):>7}"
                         f"{r['latency_ms']['p50']:>9.1f}{r['latency_ms']['p95']:>9.1f}")
        lines.append("")
    lines += [f"{report['documents']} documents ({report['characters']:,} characters, {report['chunks']} chunks), "
                  f"{report['questions']} questions {report['splits']}; artifact_ingest p50 "
                  f"{report['artifact_ingest_ms']['p50']} ms, {report['chunks_per_second']} chunks/s stored in "
                  f"this run; server peak RSS {report['server_peak_rss_mb']} MB"]
    return "\n".join(lines)


def main(questions_file: Path, docs: Path, split: str, out: Path | None, configs: Sequence[str],
         limit_docs: int | None = None, store: Path | None = None, models: Sequence[str] = ()) -> int:
    if not questions_file.is_file() or not docs.is_dir():
        print(f"memtrove-bench passages: need {questions_file} and the documents in {docs} "
              "(Debian: apt-get install python3-doc)", file=sys.stderr)
        return 2
    corpus, questions = load_questions(questions_file, split)
    if limit_docs:  # a quick run: the questions' documents first, then others up to the limit
        keep = list(dict.fromkeys([q.doc for q in questions] + corpus))[:limit_docs]
        corpus, questions = keep, [q for q in questions if q.doc in keep]
    return run_and_report(lambda chosen, data_dir, log: run(corpus, questions, docs, chosen, data_dir, log=log),
                          table, CONFIGS, configs, store, "memtrove-passages-", out, models)
