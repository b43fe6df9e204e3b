"""LoCoMo turns: store each conversation through MCP, ask its questions, score recall of the evidence turns.

Drives a real ``memtrove serve`` over stdio with the official MCP client, so the figures are what
a client gets: every turn goes in with ``history_append``, every question is a ``hybrid_search``
with ``include_history`` and the conversation as filter. Several search configurations run on
the same stored data in one run (memtrove's hybrid search and the baselines), so they compare
fairly on one machine state.
"""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime, timedelta, timezone
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import (
    BASELINES, RERANK_OFF, Scores, call, latency, per_second, recall_table, result_ids, run_and_report, server,
    server_peak_rss_mb,
)

EVIDENCE = re.compile(r"D(\d+):(\d+)")
SESSION = re.compile(r"session_(\d+)")

# name -> hybrid_search arguments (the baselines' profiles are the bench server's).
CONFIGS: dict[str, dict[str, Any]] = {"memtrove hybrid": {}, **RERANK_OFF, "memtrove lexical": {"mode": "lexical"}, **BASELINES,
                                      **{f"hybrid + graph {w}": {"profile": f"bench-graph-{w}"} for w in ("00", "05", "20")},
                                      **{f"hybrid + dates {w}": {"profile": f"bench-when-{w}"} for w in ("00", "30", "80")}}


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
    data: dict[str, Any]
    times: tuple[str | None, ...] = ()  # each turn's time (its session's, 30 s a turn), ISO; None: unknown

    @property
    def conversation_id(self) -> str:
        return f"locomo-{self.sample_id}"


def load_conversation(path: Path) -> Conversation:
    """One LoCoMo file; category 5 left out; evidence that is malformed or names no turn is counted, skipped."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sessions = sorted((int(m.group(1)), key) for key in data if (m := SESSION.fullmatch(key)))
    turns = tuple((t["dia_id"], t["speaker"], t["text"]) for _, key in sessions for t in data[key])
    times = tuple(turn_time(data.get(f"{key}_date_time"), i) for _, key in sessions for i in range(len(data[key])))
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
                        malformed, skipped, data, times)


def turn_time(session: object, position: int) -> str | None:
    """A turn's time: its session's ("1:56 pm on 8 May, 2023", taken as UTC) and 30 s a turn after it."""
    try:
        start = datetime.strptime(str(session).strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return (start + timedelta(seconds=30 * position)).strftime("%Y-%m-%dT%H:%M:%SZ")


def load(data: Path, only: Sequence[str]) -> list[Conversation]:
    files = sorted(data.glob("*.json"))
    return [load_conversation(f) for f in files if not only or f.stem in only]


async def run(conversations: Sequence[Conversation], configs: dict[str, dict[str, Any]], data_dir: Path,
              limit: int = 10, log: Any = None) -> dict[str, Any]:
    """Store every conversation through ``history_append``, then score each configuration's searches."""
    scores = {name: Scores() for name in configs}
    ingest_ms: list[float] = []
    say = log or (lambda _msg: None)
    build_s: list[float] = []
    built = 0
    async with server(data_dir, {"MEMTROVE_TOOLSETS": "core,zapomni"}) as client:
        for conv in conversations:
            index_of = {}
            kept = data_dir / f"bench-turns-{conv.sample_id}"  # a kept store: its turns are in already
            for index, (dia_id, speaker, text) in enumerate(conv.turns):
                index_of[f"{conv.conversation_id}_turn_{index}"] = dia_id
                if kept.exists():
                    continue
                role = "user" if speaker == conv.speakers[0] else "assistant"
                started = time.perf_counter()
                dated = {"ts": conv.times[index]} if index < len(conv.times) and conv.times[index] else {}
                await call(client, "history_append", conversation_id=conv.conversation_id, role=role,
                           content=f"{speaker}: {text}", turn_index=index, **dated)
                ingest_ms.append((time.perf_counter() - started) * 1000)
            kept.touch()

            def evidence(ids: list[str]) -> list[frozenset[str]]:
                return [frozenset({index_of.get(i, i)}) for i in ids]

            say(f"{conv.sample_id}: stored {len(conv.turns)} turns")
            # The caller's graph from the turns (the default profile's graph signal reads it; incremental).
            started = time.perf_counter()
            report = await call(client, "build_graph", kinds=["turn"], source=conv.conversation_id)
            build_s.append(time.perf_counter() - started)
            built += report["progress"]["processed"]
            say(f"{conv.sample_id}: graph built from {report['progress']['processed']} turns in "
                f"{build_s[-1]:.1f} s ({report['state']})")
            for name, extra in configs.items():
                for question in conv.questions:
                    base = {"query": question.text[:500], "include_history": True,
                            "filters": {"conversation_id": conv.conversation_id}, **extra}
                    started = time.perf_counter()
                    top10 = result_ids(await call(client, "hybrid_search", limit=limit, **base))
                    scores[name].latency_ms.append((time.perf_counter() - started) * 1000)
                    top20 = result_ids(await call(client, "hybrid_search", limit=20, **base))
                    scores[name].add(evidence(top10), evidence(top20), question.evidence, question.category)
            say(f"{conv.sample_id}: {len(conv.questions)} questions x {len(configs)} configurations")
        peak_rss = server_peak_rss_mb()
    return {
        "protocol": "turns",
        "turns_per_second": per_second(len(ingest_ms), ingest_ms),
        "server_peak_rss_mb": peak_rss,
        "conversations": [c.sample_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "malformed_evidence": sum(c.malformed_evidence for c in conversations),
        "questions_without_valid_evidence": sum(c.skipped_questions for c in conversations),
        "history_append_ms": latency(ingest_ms),
        "graph_build": {"turns_read": built, "seconds": round(sum(build_s), 2),
                        "turns_per_second": round(built / sum(build_s), 1) if built and sum(build_s) else None},
        "results": {name: s.summary() for name, s in scores.items()},
    }


def table(report: dict[str, Any]) -> str:
    """The results as a fixed-width table, one row per configuration, then recall@10 per category."""
    first = next(iter(report["results"].values()))
    return "\n".join([*recall_table(report["results"]), "",
                      f"{report['turns']} turns, {first['questions']} questions; "
                      f"{report['malformed_evidence']} malformed evidence ids skipped, "
                      f"{report['questions_without_valid_evidence']} questions without valid evidence; "
                      f"history_append p50 {report['history_append_ms']['p50']} ms, "
                      f"{report['turns_per_second']} turns/s stored in this run; "
                      f"server peak RSS {report['server_peak_rss_mb']} MB"
                      + (f"; build_graph read {report['graph_build']['turns_read']} turns in "
                         f"{report['graph_build']['seconds']} s ({report['graph_build']['turns_per_second']} turns/s)"
                         if report.get("graph_build", {}).get("turns_read") else "")])


def main(data: Path, out: Path | None, only: Sequence[str], configs: Sequence[str],
         store: Path | None = None, models: Sequence[str] = ()) -> int:
    conversations = load(data, only)
    if not conversations:
        print(f"memtrove-bench: no conversation files in {data}", file=sys.stderr)
        return 2
    return run_and_report(lambda chosen, data_dir, log: run(conversations, chosen, data_dir, log=log), table,
                          CONFIGS, configs, store, "memtrove-turns-", out, models)
