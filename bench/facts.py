"""LoCoMo facts: each session's observations stored as memories, the questions asked through memory_search.

One fresh store (and server) per conversation: every ``session_N_observation`` fact goes in with
``memory_store`` (type ``fact``, content ``"[8 May 2023] <fact>"`` with its session's date); each
scored question is a ``memory_search`` (limit 10, and 20 for recall@20). A fact stands for the
evidence turns it points at; recall@k is the share of a question's evidence turns named by the
first k facts. Only part of the evidence turns have a fact at all: the report gives that ceiling.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import (
    BASELINES, RERANK_OFF, Scores, call, latency, per_second, recall_table, result_ids, run_and_report, server,
    server_peak_rss_mb,
)
from bench.turns import EVIDENCE, Conversation, load

OBSERVATION = re.compile(r"session_(\d+)_observation")
CONFIGS: dict[str, dict[str, Any]] = {"memtrove hybrid": {}, **RERANK_OFF, "profile default": {"profile": "default"},
                                      **BASELINES}


def session_date(text: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` -> ``"8 May 2023"`` (the text as it is when it has no time part)."""
    return text.split(" on ", 1)[-1].replace(",", "").strip()


def facts_of(conv: Conversation) -> list[tuple[str, frozenset[str]]]:
    """(memory content, the evidence turns it points at) for every observation, in session order."""
    found: list[tuple[int, str, frozenset[str]]] = []
    for key, by_speaker in conv.data.items():
        if not (m := OBSERVATION.fullmatch(key)) or not isinstance(by_speaker, dict):
            continue
        date = session_date(str(conv.data.get(f"session_{m.group(1)}_date_time", "")))
        for items in by_speaker.values():
            for item in items:
                if not isinstance(item, list) or len(item) < 2 or not str(item[0]).strip():
                    continue
                points = item[1] if isinstance(item[1], list) else [item[1]]
                turns = frozenset(f"D{a}:{b}" for p in points for a, b in EVIDENCE.findall(str(p)))
                found.append((int(m.group(1)), f"[{date}] {item[0]}"[:10_000], turns))
    return [(content, turns) for _, content, turns in sorted(found, key=lambda f: f[0])]


async def run(conversations: Sequence[Conversation], configs: dict[str, dict[str, Any]], data_dir: Path,
              log: Any = None) -> dict[str, Any]:
    scores = {name: Scores() for name in configs}
    store_ms: list[float] = []
    peak_rss = 0.0
    stored = covered = evidence_total = 0
    say = log or (lambda _msg: None)
    for conv in conversations:
        facts = facts_of(conv)
        kept = data_dir / conv.sample_id / "bench-facts.json"  # a kept store: its facts are in already
        if not kept.is_file() and (data_dir / conv.sample_id / "memtrove.sqlite3").exists():
            raise RuntimeError(f"{data_dir / conv.sample_id} holds a store whose facts were not all stored "
                               "(an interrupted run): remove it and run again")
        async with server(data_dir / conv.sample_id) as client:
            points: dict[str, frozenset[str]] = {}
            if kept.is_file():
                points = {i: frozenset(t) for i, t in json.loads(kept.read_text(encoding="utf-8")).items()}
            fresh = not points
            for content, turns in (facts if fresh else []):
                started = time.perf_counter()
                memory = await call(client, "memory_store", content=content, type="fact", confidence=1.0,
                                    conversation_id=conv.conversation_id)
                store_ms.append((time.perf_counter() - started) * 1000)
                points[memory["id"]] = points.get(memory["id"], frozenset()) | turns
            kept.write_text(json.dumps({i: sorted(t) for i, t in points.items()}), encoding="utf-8")
            stored += len(facts)
            with_fact = frozenset().union(*points.values()) if points else frozenset()
            say(f"{conv.sample_id}: {len(facts)} facts" + (" stored" if fresh else " (stored before)"))
            for question in conv.questions:
                evidence_total += len(question.evidence)
                covered += len(set(question.evidence) & with_fact)
            for name, extra in configs.items():
                for question in conv.questions:
                    base = {"query": question.text[:500], **extra}
                    started = time.perf_counter()
                    top10 = result_ids(await call(client, "memory_search", limit=10, **base))
                    scores[name].latency_ms.append((time.perf_counter() - started) * 1000)
                    top20 = result_ids(await call(client, "memory_search", limit=20, **base))
                    scores[name].add([points.get(i, frozenset()) for i in top10],
                                     [points.get(i, frozenset()) for i in top20], question.evidence,
                                     question.category)
            say(f"{conv.sample_id}: {len(conv.questions)} questions x {len(configs)} configurations")
            peak_rss = max(peak_rss, server_peak_rss_mb())
    return {
        "facts_per_second": per_second(len(store_ms), store_ms),
        "server_peak_rss_mb": peak_rss,
        "protocol": "facts",
        "conversations": [c.sample_id for c in conversations],
        "facts": stored,
        "evidence_with_a_fact": round(covered / evidence_total, 4) if evidence_total else 0.0,
        "memory_store_ms": latency(store_ms),
        "results": {name: s.summary() for name, s in scores.items()},
    }


def table(report: dict[str, Any]) -> str:
    first = next(iter(report["results"].values()))
    return "\n".join([*recall_table(report["results"]), "",
                      f"{report['facts']} facts, {first['questions']} questions; share of evidence turns "
                      f"with a fact (the ceiling): {report['evidence_with_a_fact']}; "
                      f"memory_store p50 {report['memory_store_ms']['p50']} ms, "
                      f"{report['facts_per_second']} facts/s stored in this run; "
                      f"server peak RSS {report['server_peak_rss_mb']} MB"])


def main(data: Path, out: Path | None, only: Sequence[str], configs: Sequence[str],
         store: Path | None = None, models: Sequence[str] = ()) -> int:
    conversations = load(data, only)
    if not conversations:
        print(f"memtrove-bench: no conversation files in {data}", file=sys.stderr)
        return 2
    return run_and_report(lambda chosen, data_dir, log: run(conversations, chosen, data_dir, log=log), table,
                          CONFIGS, configs, store, "memtrove-facts-", out, models)
