"""A mixed store (issue 43): conversations, their facts as memories and real documents in ONE store,
against each collection alone, in the same run.

Four stores, each with its own fresh ``memtrove serve`` over MCP stdio, built in this run:
  - ``turns``: every turn of the LoCoMo conversations with ``history_append`` at its session's time
    (as bench/turns.py stores them);
  - ``facts``: every ``session_N_observation`` of them with ``memory_store`` (as bench/facts.py);
  - ``documents``: Python library documents of the passages question set (as bench/passages.py),
    a few hundred KB, and the questions about them;
  - ``mixed``: all of the above in one data dir.
Every question goes to every store the same way: ``hybrid_search(query, include_memory=true,
include_history=true, limit=10)``, no filter (all conversations, all collections). "Alone" is a store
holding only that collection, not the mixed store filtered to it: a filter would still search the
mixed store's indexes and skip exactly what a mix changes (documents crowding the candidate lists,
word weights counted over every collection); a user with only conversations has a store of only
conversations.

Scores (evidence turns are named by conversation and dia_id, so a turn or fact of another
conversation never counts): turns R@k (the evidence turns among the first k results), facts R@k
(evidence turns a fact among the first k points at, as bench/facts.py), both in the mixed list by
the collection's own records and "turn or fact" (either one found it); passages hit@k and MRR@10 (as
bench/passages.py). In the mixed list a turn and the fact written from it answer the same question and
share the first ten, so a collection's own R@10 there falls by the room the other takes: the
turn-or-fact figure is the one an agent sees, and the one the issue's mixed/alone >= 0.97 is read on.
How far documents crowd in is counted too: document
results among the first ten for a conversation question, conversation results among the first five
for a document question.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import passages
from bench.common import call, latency, mean, recall_at, server, store_dir, write_report
from bench.facts import facts_of
from bench.turns import Conversation, load

KS = (1, 5, 10)
STORES = ("turns", "facts", "documents", "mixed")
HOLDS = {"turns": ("turns",), "facts": ("facts",), "documents": ("documents",),
         "mixed": ("documents", "facts", "turns")}
DOC_BUDGET = 400_000  # characters of documents (a few hundred KB)
LARGEST_DOC = 60_000  # several documents rather than two big ones


@dataclass(frozen=True, slots=True)
class Corpus:
    conversations: list[Conversation]
    documents: dict[str, str]  # name -> text
    doc_questions: list[passages.Question]


def corpus(data: Path, only: Sequence[str], questions: Path, docs: Path, budget: int = DOC_BUDGET) -> Corpus:
    """The conversations, and the question set's documents (each up to LARGEST_DOC, in the set's order)
    up to ``budget`` characters, with their questions (both splits: nothing is tuned here)."""
    _, asked = passages.load_questions(questions)
    texts: dict[str, str] = {}
    for name in dict.fromkeys(q.doc for q in asked):
        if sum(map(len, texts.values())) >= budget:
            break
        text = (docs / name).read_text(encoding="utf-8")
        if len(text) <= LARGEST_DOC:
            texts[name] = text
    return Corpus(load(data, only), texts, [q for q in asked if q.doc in texts])


def key(conv: Conversation, dia_id: str) -> str:
    return f"{conv.sample_id}/{dia_id}"


async def ingest(client: Any, corpus: Corpus, holds: Sequence[str], say: Any) -> dict[str, Any]:
    """Store the collections ``holds`` names; what each result id stands for, and the store's sizes."""
    kind: dict[str, str] = {}  # result id -> turns | facts | documents
    points: dict[str, list[str]] = {}  # turn or fact id -> evidence keys
    doc_of: dict[str, str] = {}  # artifact id -> document name
    started = time.perf_counter()
    if "documents" in holds:
        for name, text in corpus.documents.items():
            stored = await call(client, "artifact_ingest", artifact_type="doc", source_system="python-docs",
                                source_id=f"library/{name}", title=name.removesuffix(".rst.txt"), content=text)
            doc_of[stored["artifact_id"]] = name
            kind[stored["artifact_id"]] = "documents"
    for conv in corpus.conversations:
        if "facts" in holds:
            for content, turns in facts_of(conv):
                memory = await call(client, "memory_store", content=content, type="fact", confidence=1.0,
                                    conversation_id=conv.conversation_id)
                kind[memory["id"]] = "facts"
                points[memory["id"]] = sorted({*points.get(memory["id"], []), *(key(conv, t) for t in turns)})
        if "turns" in holds:
            for index, (dia_id, speaker, text) in enumerate(conv.turns):
                dated = {"ts": conv.times[index]} if index < len(conv.times) and conv.times[index] else {}
                await call(client, "history_append", conversation_id=conv.conversation_id,
                           role="user" if speaker == conv.speakers[0] else "assistant",
                           content=f"{speaker}: {text}", turn_index=index, **dated)
                turn_id = f"{conv.conversation_id}_turn_{index}"
                kind[turn_id], points[turn_id] = "turns", [key(conv, dia_id)]
        say(f"  {conv.sample_id}: stored ({', '.join(h for h in holds if h != 'documents')})")
    return {"kind": kind, "points": points, "doc_of": doc_of, "seconds": round(time.perf_counter() - started, 1),
            "records": {h: sum(1 for k in kind.values() if k == h) for h in holds}}


def collection_of(hit: dict[str, Any], stored: dict[str, Any]) -> str | None:
    """turns, facts or documents (a chunk's id is not an artifact's: its type and artifact say)."""
    if hit["type"] in ("chunk", "artifact") or hit.get("artifact_id") in stored["doc_of"]:
        return "documents"
    return stored["kind"].get(hit["id"])


def evidence_in(ranked: list[dict[str, Any]], stored: dict[str, Any], kinds: Sequence[str]) -> list[frozenset[str]]:
    """What each result stands for, counting only results of ``kinds``."""
    return [frozenset(stored["points"].get(h["id"], ())) if stored["kind"].get(h["id"]) in kinds else frozenset()
            for h in ranked]


def passage_of(hit: dict[str, Any], stored: dict[str, Any], texts: dict[str, str]) -> tuple[str, str]:
    """(document, text) of a document result: its passage by its offsets in the artifact; else nothing."""
    name = stored["doc_of"].get(hit.get("artifact_id") or hit["id"], "")
    if not name:
        return "", ""
    whole = texts[name]
    if hit["type"] == "artifact":
        return name, whole
    if isinstance(hit.get("start_char"), int) and isinstance(hit.get("end_char"), int):
        return name, whole[hit["start_char"]:hit["end_char"]]
    return name, stored["chunks"].get(hit["id"], "")


async def chunk_texts(client: Any, stored: dict[str, Any], texts: dict[str, str]) -> dict[str, str]:
    """Each chunk's text from its offsets (a hit shows a snippet)."""
    found: dict[str, str] = {}
    for artifact_id, name in stored["doc_of"].items():
        view = await call(client, "artifact_get", artifact_id=artifact_id, include_chunks=True)
        for chunk in view.get("chunks") or []:
            found[chunk["chunk_id"]] = texts[name][chunk["start_char"]:chunk["end_char"]]
    return found


async def one_store(name: str, corpus: Corpus, data_dir: Path, say: Any) -> dict[str, Any]:
    """Build (or find built) one store and ask it every question; the raw per-question results."""
    holds = HOLDS[name]
    marker = data_dir / "bench-mixed.json"
    async with server(data_dir) as client:
        if marker.is_file():
            stored = json.loads(marker.read_text(encoding="utf-8"))
            say(f"{name}: stored before")
        else:
            say(f"{name}: storing {', '.join(holds)}")
            stored = await ingest(client, corpus, holds, say)
            stored["chunks"] = await chunk_texts(client, stored, corpus.documents)
            marker.write_text(json.dumps(stored), encoding="utf-8")
        asked: dict[str, list[Any]] = {
            "locomo": [q.text for c in corpus.conversations for q in c.questions] if {"turns", "facts"} & set(holds) else [],
            "documents": [q.text for q in corpus.doc_questions] if "documents" in holds else []}
        waits: list[float] = []
        for kind, questions in asked.items():
            answers: list[list[dict[str, Any]]] = []
            for query in questions:
                started = time.perf_counter()
                found = await call(client, "hybrid_search", query=query[:500], include_memory=True,
                                   include_history=True, limit=10)
                waits.append((time.perf_counter() - started) * 1000)
                answers.append(found.get("results", []))
            asked[kind] = answers
        say(f"{name}: {len(waits)} questions asked")
    return {"stored": stored, "asked": asked, "latency_ms": latency(waits)}


def recall(rows: list[list[frozenset[str]]], evidence: list[tuple[str, ...]]) -> dict[str, float]:
    return {f"recall@{k}": mean([recall_at(r, e, k) for r, e in zip(rows, evidence, strict=True)]) for k in KS}


def score(corpus: Corpus, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    evidence = [tuple(key(c, d) for d in q.evidence) for c in corpus.conversations for q in c.questions]
    mixed = runs["mixed"]
    out: dict[str, Any] = {}
    for collection in ("turns", "facts"):
        alone = runs[collection]
        out[collection] = {
            "alone": recall([evidence_in(r, alone["stored"], (collection,)) for r in alone["asked"]["locomo"]], evidence),
            "mixed": recall([evidence_in(r, mixed["stored"], (collection,)) for r in mixed["asked"]["locomo"]], evidence)}
    out["turn or fact"] = {"mixed": recall([evidence_in(r, mixed["stored"], ("turns", "facts"))
                                            for r in mixed["asked"]["locomo"]], evidence)}
    for collection in ("turns", "facts"):
        a, m = out[collection]["alone"]["recall@10"], out[collection]["mixed"]["recall@10"]
        out[collection]["ratio@10"] = round(m / a, 3) if a else None
        either = out["turn or fact"]["mixed"]["recall@10"]
        out[collection]["turn or fact / alone@10"] = round(either / a, 3) if a else None
    docs_in = [sum(collection_of(h, mixed["stored"]) == "documents" for h in r[:10]) for r in mixed["asked"]["locomo"]]
    out["documents among the first 10 of a conversation question"] = mean(docs_in)
    passage_scores: dict[str, Any] = {}
    for name in ("documents", "mixed"):
        scores = passages.PassageScores()
        for question, ranked in zip(corpus.doc_questions, runs[name]["asked"]["documents"], strict=True):
            scores.add([passage_of(h, runs[name]["stored"], corpus.documents) for h in ranked], question)
        passage_scores["alone" if name == "documents" else "mixed"] = {
            k: v for k, v in scores.summary().items() if k != "latency_ms"}
    a, m = passage_scores["alone"]["hit@5"], passage_scores["mixed"]["hit@5"]
    out["passages"] = {**passage_scores, "ratio hit@5": round(m / a, 3) if a else None}
    talk = [sum(collection_of(h, mixed["stored"]) in ("turns", "facts") for h in r[:5])
            for r in mixed["asked"]["documents"]]
    out["conversation results among the first 5 of a document question"] = mean(talk)
    return out


async def run(corpus: Corpus, data_dir: Path, log: Any = None) -> dict[str, Any]:
    say = log or (lambda _msg: None)
    return summary(corpus, {name: await one_store(name, corpus, data_dir / name, say) for name in STORES})


def summary(corpus: Corpus, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The report from each store's run (``one_store``)."""
    return {
        "protocol": "mixed",
        "conversations": [c.sample_id for c in corpus.conversations],
        "documents": len(corpus.documents), "document_characters": sum(map(len, corpus.documents.values())),
        "questions": {"conversations": sum(len(c.questions) for c in corpus.conversations),
                      "documents": len(corpus.doc_questions)},
        "records": {name: r["stored"]["records"] | {"chunks": len(r["stored"]["chunks"])} for name, r in runs.items()},
        "latency_ms": {name: r["latency_ms"] for name, r in runs.items()},
        "results": score(corpus, runs),
    }


def table(report: dict[str, Any]) -> str:
    r = report["results"]

    def row(label: str, alone: float, mixed: float, ratio: float | None = None) -> str:
        return f"{label:<30}{alone:>8.3f}{mixed:>8.3f}" + (f"{ratio:>8.3f}" if ratio is not None else "")

    either = r["turn or fact"]["mixed"]["recall@10"]
    crowd = (f"documents among the first 10 of a conversation question: "
             f"{r['documents among the first 10 of a conversation question']}; conversation results among "
             f"the first 5 of a document question: {r['conversation results among the first 5 of a document question']}")
    sizes = (f"{len(report['conversations'])} conversations ({report['questions']['conversations']} questions), "
             f"{report['documents']} documents ({report['document_characters']:,} characters, "
             f"{report['questions']['documents']} questions); records {report['records']}")
    waits = ", ".join(f"{n} {v['p50']}/{v['p95']}" for n, v in report["latency_ms"].items())
    return "\n".join([
        f"{'collection':<30}{'alone':>8}{'mixed':>8}{'ratio':>8}   (R@10; passages hit@5, MRR@10)",
        row("turns (own records)", r["turns"]["alone"]["recall@10"], r["turns"]["mixed"]["recall@10"],
            r["turns"]["ratio@10"]),
        row("facts (own records)", r["facts"]["alone"]["recall@10"], r["facts"]["mixed"]["recall@10"],
            r["facts"]["ratio@10"]),
        row("turn or fact vs turns alone", r["turns"]["alone"]["recall@10"], either,
            r["turns"]["turn or fact / alone@10"]),
        row("turn or fact vs facts alone", r["facts"]["alone"]["recall@10"], either,
            r["facts"]["turn or fact / alone@10"]),
        row("passages hit@5", r["passages"]["alone"]["hit@5"], r["passages"]["mixed"]["hit@5"],
            r["passages"]["ratio hit@5"]),
        row("passages MRR@10", r["passages"]["alone"]["mrr@10"], r["passages"]["mixed"]["mrr@10"]),
        "", crowd, sizes, f"hybrid_search p50/p95 ms: {waits}"])


def main(data: Path, only: Sequence[str], questions: Path, docs: Path, budget: int, store: Path | None,
         out: Path | None) -> int:
    if not questions.is_file() or not docs.is_dir():
        print(f"memtrove-bench mixed: need {questions} and the documents in {docs} (Debian: apt-get install "
              "python3-doc)", file=sys.stderr)
        return 2
    found = corpus(data, only, questions, docs, budget)
    if not found.conversations:
        print(f"memtrove-bench mixed: no conversation files in {data}", file=sys.stderr)
        return 2
    import anyio

    with store_dir(store, "memtrove-mixed-") as data_dir:
        report = anyio.run(lambda: run(found, data_dir, lambda m: print(m, file=sys.stderr, flush=True)))
    write_report(report, table(report), out)
    return 0
