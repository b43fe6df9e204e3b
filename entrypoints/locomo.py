"""LoCoMo retrieval benchmark: store each conversation through MCP, ask its questions, score recall.

Drives a real ``memtrove serve`` over stdio with the official MCP client, so the figures are what
a client gets: every turn goes in with ``history_append``, every question is a ``hybrid_search``
with ``include_history`` and the conversation as filter. Several search configurations run on
the same stored data in one run (memtrove's hybrid search and the baselines), so they compare
fairly on one machine state.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KS = (1, 5, 10, 20)
EVIDENCE = re.compile(r"D(\d+):(\d+)")
SESSION = re.compile(r"session_(\d+)")

# name -> hybrid_search arguments. "plain RRF" is a weight profile the bench defines for its server.
CONFIGS: dict[str, dict[str, Any]] = {
    "memtrove hybrid": {},
    "memtrove lexical": {"mode": "lexical"},
    "BM25 alone": {"mode": "lexical", "profile": "bench-bm25"},
    "vectors alone": {"mode": "vector"},
    "plain RRF": {"profile": "bench-plain-rrf"},
}
# The baselines as profiles of the bench's server: words of the turn itself only (no neighbours),
# and for plain RRF equal weights with k = 60.
BENCH_PROFILES = {"bench-bm25": {"lexical": 1.0, "exact": 0.0, "context": 0.0},
                  "bench-plain-rrf": {"lexical": 1.0, "semantic": 1.0, "exact": 0.0, "k": 60, "context": 0.0}}


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # dia_ids of turns that exist


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[tuple[str, str, str], ...]  # (dia_id, speaker, text) in session order
    questions: tuple[Question, ...]
    malformed_evidence: int
    skipped_questions: int

    @property
    def conversation_id(self) -> str:
        return f"locomo-{self.sample_id}"


def load_conversation(path: Path) -> Conversation:
    """One LoCoMo file; category 5 left out; evidence that is malformed or names no turn is counted, skipped."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = sorted((int(m.group(1)), key) for key in data if (m := SESSION.fullmatch(key)))
    turns = tuple((t["dia_id"], t["speaker"], t["text"]) for _, key in sessions for t in data[key])
    known = {dia_id for dia_id, _, _ in turns}
    malformed = skipped = 0
    questions: list[Question] = []
    for qa in data.get("qa", []):
        if qa.get("category") == 5:
            continue
        evidence: list[str] = []
        for item in qa.get("evidence", []):
            if isinstance(item, str) and EVIDENCE.fullmatch(item) and item in known:
                evidence.append(item)
            else:
                malformed += 1
        if evidence:
            questions.append(Question(str(qa["question"]), int(qa["category"]), tuple(dict.fromkeys(evidence))))
        else:
            skipped += 1
    return Conversation(path.stem, (data["speaker_a"], data["speaker_b"]), turns, tuple(questions),
                        malformed, skipped)


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(evidence)) / len(evidence)


@dataclass
class Scores:
    """Recall@k and hit@10 averaged over questions, overall and per category; latencies in ms."""

    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    hit10: list[float] = field(default_factory=list)
    by_category: dict[int, dict[int, list[float]]] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, top10: Sequence[str], top20: Sequence[str], question: Question) -> None:
        category = self.by_category.setdefault(question.category, {k: [] for k in KS})
        for k in KS:
            value = recall_at(top20 if k > 10 else top10, question.evidence, k)
            self.recall[k].append(value)
            category[k].append(value)
        self.hit10.append(float(bool(set(top10) & set(question.evidence))))

    def summary(self) -> dict[str, Any]:
        def mean(values: list[float]) -> float:
            return round(statistics.fmean(values), 4) if values else 0.0

        latencies = sorted(self.latency_ms)
        return {
            "questions": len(self.hit10),
            **{f"recall@{k}": mean(v) for k, v in self.recall.items()},
            "hit@10": mean(self.hit10),
            "by_category": {str(c): {f"recall@{k}": mean(v) for k, v in r.items()} | {"questions": len(r[1])}
                            for c, r in sorted(self.by_category.items())},
            "latency_ms": {"p50": round(percentile(latencies, 50), 2), "p95": round(percentile(latencies, 95), 2),
                           "calls": len(latencies)},
        }


def percentile(ordered: Sequence[float], pct: float) -> float:
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))]


async def run(conversations: Sequence[Conversation], configs: dict[str, dict[str, Any]], data_dir: Path,
              limit: int = 10, log: Any = None) -> dict[str, Any]:
    """Store every conversation through ``history_append``, then score each configuration's searches."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTROVE_", "OPENAI_", "CHROMA_"))}
    env.update({"MEMTROVE_DATA_DIR": str(data_dir), "MEMTROVE_SEARCH_WEIGHTS": json.dumps(BENCH_PROFILES),
                "MEMTROVE_WARMUP": "true", "LOG_LEVEL": "WARNING",
                "MEMTROVE_SHARED": "false"})  # a fresh server of its own, not a bridge to a shared one
    for passed in ("MEMTROVE_EMBEDDER", "MEMTROVE_SEARCH_PROFILE"):
        if os.environ.get(passed):
            env[passed] = os.environ[passed]
    from entrypoints.cli import memtrove_command

    command, *prefix = memtrove_command()
    params = StdioServerParameters(command=command, args=[*prefix, "serve"], env=env)
    scores = {name: Scores() for name in configs}
    ingest_ms: list[float] = []
    say = log or (lambda _msg: None)
    with open(data_dir / "server.log", "a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            for conv in conversations:
                index_of = {}
                for index, (dia_id, speaker, text) in enumerate(conv.turns):
                    role = "user" if speaker == conv.speakers[0] else "assistant"
                    started = time.perf_counter()
                    await call(client, "history_append", conversation_id=conv.conversation_id, role=role,
                               content=f"{speaker}: {text}", turn_index=index)
                    ingest_ms.append((time.perf_counter() - started) * 1000)
                    index_of[f"{conv.conversation_id}_turn_{index}"] = dia_id
                say(f"{conv.sample_id}: stored {len(conv.turns)} turns")
                for name, extra in configs.items():
                    for question in conv.questions:
                        base = {"query": question.text[:500], "include_history": True,
                                "filters": {"conversation_id": conv.conversation_id}, **extra}
                        started = time.perf_counter()
                        top10 = await call(client, "hybrid_search", limit=limit, **base)
                        scores[name].latency_ms.append((time.perf_counter() - started) * 1000)
                        top20 = await call(client, "hybrid_search", limit=20, **base)
                        scores[name].add([index_of.get(i, i) for i in top10], [index_of.get(i, i) for i in top20],
                                         question)
                say(f"{conv.sample_id}: {len(conv.questions)} questions x {len(configs)} configurations")
    ordered = sorted(ingest_ms)
    return {
        "conversations": [c.sample_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "malformed_evidence": sum(c.malformed_evidence for c in conversations),
        "questions_without_valid_evidence": sum(c.skipped_questions for c in conversations),
        "history_append_ms": {"p50": round(percentile(ordered, 50), 2), "p95": round(percentile(ordered, 95), 2)},
        "results": {name: s.summary() for name, s in scores.items()},
    }


async def call(client: Any, tool: str, **arguments: Any) -> list[str]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise RuntimeError(f"{tool} failed: {text}")
    return [hit["id"] for hit in (result.structured_content or {}).get("results", [])]


def table(report: dict[str, Any]) -> str:
    """The results as a fixed-width table, one row per configuration, then recall@10 per category."""
    rows = report["results"]
    head = f"{'configuration':<18}" + "".join(f"{f'R@{k}':>8}" for k in KS) + f"{'hit@10':>8}{'p50 ms':>9}{'p95 ms':>9}"
    lines = [head, "-" * len(head)]
    for name, r in rows.items():
        lines.append(f"{name:<18}" + "".join(f"{r[f'recall@{k}']:>8.3f}" for k in KS)
                     + f"{r['hit@10']:>8.3f}{r['latency_ms']['p50']:>9.1f}{r['latency_ms']['p95']:>9.1f}")
    categories = sorted({c for r in rows.values() for c in r["by_category"]})
    lines += ["", f"{'recall@10 by category':<18}" + "".join(f"{f'cat {c}':>9}" for c in categories)]
    for name, r in rows.items():
        lines.append(f"{name:<18}" + "".join(f"{r['by_category'][c]['recall@10']:>9.3f}" for c in categories))
    lines.append(f"{'questions':<18}" + "".join(
        f"{next(iter(rows.values()))['by_category'][c]['questions']:>9}" for c in categories))
    lines += ["", f"{report['turns']} turns, {next(iter(rows.values()))['questions']} questions; "
                  f"{report['malformed_evidence']} malformed evidence ids skipped, "
                  f"{report['questions_without_valid_evidence']} questions without valid evidence; "
                  f"history_append p50 {report['history_append_ms']['p50']} ms"]
    return "\n".join(lines)


def main(data: Path, out: Path | None, only: Sequence[str], configs: Sequence[str]) -> int:
    import anyio

    files = sorted(data.glob("*.json"))
    if only:
        files = [f for f in files if f.stem in only]
    if not files:
        print(f"memtrove bench locomo: no conversation files in {data}", file=sys.stderr)
        return 2
    chosen = {name: CONFIGS[name] for name in (configs or CONFIGS)}
    conversations = [load_conversation(f) for f in files]
    with tempfile.TemporaryDirectory(prefix="memtrove-locomo-") as tmp:
        report = anyio.run(lambda: run(conversations, chosen, Path(tmp),
                                       log=lambda m: print(m, file=sys.stderr, flush=True)))
    print(table(report))
    if out:
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nJSON written to {out}")
    return 0

