"""LoCoMo turns with the graph as an agent gets it: what the background graph buys with no build_graph call.

``python -m bench.turns_graph --data ../shared/locomo --out graph-modes.json``: two fresh servers over
MCP stdio, the same turns stored in each with ``history_append`` at their session's time.
- background off: every question asked before any graph exists (``no graph``), then after
  ``build_graph(kinds=["turn"], source=<conversation>)`` (``build_graph called``);
- background on (the default): after the last write the bench waits until ``graph_status`` says the
  background graph is current (the wait is reported), then asks (``background graph``); no build_graph.
Questions are the default profile's ``hybrid_search`` (include_history, the conversation as filter,
limit 10). Recall@1/5/10 overall and per conversation (the leave-one-out view: no figure is tuned on the
conversation it reports), and history_append turns a second with the background off and on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from bench.common import Scores, call, latency, per_second, result_ids, server, store_dir
from bench.turns import Conversation, load

MODES = ("no graph", "build_graph called", "background graph")
ENV = {"MEMTROVE_TOOLSETS": "core,zapomni"}


async def _store(client: Any, conversations: Sequence[Conversation]) -> tuple[list[float], float]:
    """Every turn through history_append: each call's ms, and the wall time in seconds."""
    spent, began = [], time.perf_counter()
    for conv in conversations:
        for index, (_, speaker, text) in enumerate(conv.turns):
            role = "user" if speaker == conv.speakers[0] else "assistant"
            dated = {"ts": conv.times[index]} if index < len(conv.times) and conv.times[index] else {}
            started = time.perf_counter()
            await call(client, "history_append", conversation_id=conv.conversation_id, role=role,
                       content=f"{speaker}: {text}", turn_index=index, **dated)
            spent.append((time.perf_counter() - started) * 1000)
    return spent, time.perf_counter() - began


async def _ask(client: Any, conv: Conversation, scores: Scores, each: Scores,
               extra: dict[str, Any] | None = None) -> None:
    index_of = {f"{conv.conversation_id}_turn_{i}": dia_id for i, (dia_id, _, _) in enumerate(conv.turns)}
    for question in conv.questions:
        started = time.perf_counter()
        found = result_ids(await call(client, "hybrid_search", query=question.text[:500], include_history=True,
                                      filters={"conversation_id": conv.conversation_id}, limit=10,
                                      **(extra or {})))
        took = (time.perf_counter() - started) * 1000
        ranked = [frozenset({index_of.get(i, i)}) for i in found]
        for s in (scores, each):
            s.latency_ms.append(took)
            s.add(ranked, ranked, question.evidence, question.category)


async def _current(client: Any, timeout: float = 3600.0) -> tuple[float, dict[str, Any]]:
    """Seconds until graph_status says the background graph is current, and its last answer."""
    began = time.perf_counter()
    while True:
        status = await call(client, "graph_status")
        background = status.get("background", {})
        if background.get("current"):
            return time.perf_counter() - began, background
        if time.perf_counter() - began > timeout:
            raise RuntimeError(f"the background graph is not current after {timeout} s: {background}")
        await anyio.sleep(0.5)


async def run(conversations: Sequence[Conversation], data_dir: Path, say: Any) -> dict[str, Any]:
    scores = {m: Scores() for m in MODES}
    per = {m: {c.sample_id: Scores() for c in conversations} for m in MODES}
    built: dict[str, Any] = {}
    async with server(data_dir / "off", {**ENV, "MEMTROVE_GRAPH_BACKGROUND": "false"}) as client:
        off_ms, off_wall = await _store(client, conversations)
        say(f"background off: {len(off_ms)} turns stored, {per_second(len(off_ms), off_ms)} turns/s")
        for conv in conversations:
            await _ask(client, conv, scores["no graph"], per["no graph"][conv.sample_id])
            started = time.perf_counter()
            report = await call(client, "build_graph", kinds=["turn"], source=conv.conversation_id)
            built[conv.sample_id] = {"turns_read": report["progress"]["processed"],
                                     "seconds": round(time.perf_counter() - started, 2)}
            await _ask(client, conv, scores["build_graph called"], per["build_graph called"][conv.sample_id])
            say(f"{conv.sample_id}: no graph / build_graph ({built[conv.sample_id]})")
    async with server(data_dir / "on", ENV) as client:
        on_ms, on_wall = await _store(client, conversations)
        say(f"background on: {len(on_ms)} turns stored, {per_second(len(on_ms), on_ms)} turns/s")
        wait, background = await _current(client)
        say(f"background graph current {wait:.1f} s after the last write")
        for conv in conversations:
            await _ask(client, conv, scores["background graph"], per["background graph"][conv.sample_id])
        after: dict[str, Any] = {}
        for conv in conversations[:1]:  # build_graph once the background is current: what is left to read
            started = time.perf_counter()
            report = await call(client, "build_graph", kinds=["turn"], source=conv.conversation_id)
            after = {"conversation": conv.sample_id, "turns_read": report["progress"]["processed"],
                     "unchanged": report.get("records_unchanged"), "seconds": round(time.perf_counter() - started, 2)}
    return {
        "protocol": "turns-graph-modes", "conversations": [c.sample_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "write": {"background_off": {"turns_per_second": per_second(len(off_ms), off_ms), "wall_s": round(off_wall, 1),
                                     "history_append_ms": latency(off_ms)},
                  "background_on": {"turns_per_second": per_second(len(on_ms), on_ms), "wall_s": round(on_wall, 1),
                                    "history_append_ms": latency(on_ms)},
                  "ratio_on_off": round(per_second(len(on_ms), on_ms) / per_second(len(off_ms), off_ms), 3)},
        "background_current_after_s": round(wait, 1), "background": background,
        "build_graph": built, "build_graph_after_background": after,
        "results": {m: s.summary() for m, s in scores.items()},
        "per_conversation": {m: {c: s.summary() for c, s in by.items()} for m, by in per.items()},
    }


async def ask_again(conversations: Sequence[Conversation], data_dir: Path, say: Any,
                    sides: Sequence[str] = ("off", "on")) -> dict[str, Any]:
    """The kept stores of a run asked again by one bench process, each with the graph signal on (the
    default profile) and off (``bench-graph-00``): the same code answers every configuration."""
    asked = {"no graph (off store)": ("off", {"profile": "bench-graph-00"}),
             "build_graph called": ("off", {}),
             "no graph (on store)": ("on", {"profile": "bench-graph-00"}),
             "background graph": ("on", {})}
    asked = {m: a for m, a in asked.items() if a[0] in sides}
    scores = {m: Scores() for m in asked}
    per = {m: {c.sample_id: Scores() for c in conversations} for m in asked}
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:  # both started at once: the same code answers both stores
        clients = {side: await stack.enter_async_context(server(data_dir / side, {
            **ENV, "MEMTROVE_GRAPH_BACKGROUND": "false"})) for side in sides}
        for mode, (where, extra) in asked.items():
            for conv in conversations:
                await _ask(clients[where], conv, scores[mode], per[mode][conv.sample_id], extra)
            say(f"{mode}: asked")
    return {"protocol": "turns-graph-modes (asked again)", "conversations": [c.sample_id for c in conversations],
            "results": {m: s.summary() for m, s in scores.items()},
            "per_conversation": {m: {c: s.summary() for c, s in by.items()} for m, by in per.items()}}


async def throughput(conversations: Sequence[Conversation], data_dir: Path, say: Any, turns: int = 400,
                     block: int = 100) -> dict[str, Any]:
    """history_append turns/s with the background off and on, both servers up at once and written in
    alternate blocks (off, on, ...; before the next block the on server's graph is let catch up,
    untimed), so both see the same machine and the on server's writes pay for its own extraction only."""
    from contextlib import AsyncExitStack

    said = [(conv, i) for conv in conversations for i in range(len(conv.turns))][:turns]
    spent: dict[str, list[float]] = {"off": [], "on": []}
    async with AsyncExitStack() as stack:
        clients = {side: await stack.enter_async_context(server(
            data_dir / f"rate-{side}", {**ENV, "MEMTROVE_GRAPH_BACKGROUND": "true" if side == "on" else "false"}))
            for side in ("off", "on")}
        for start in range(0, len(said), block):
            for side in ("off", "on"):
                for conv, index in said[start:start + block]:
                    _, speaker, text = conv.turns[index]
                    role = "user" if speaker == conv.speakers[0] else "assistant"
                    dated = {"ts": conv.times[index]} if index < len(conv.times) and conv.times[index] else {}
                    began = time.perf_counter()
                    await call(clients[side], "history_append", conversation_id=conv.conversation_id, role=role,
                               content=f"{speaker}: {text}", turn_index=index, **dated)
                    spent[side].append((time.perf_counter() - began) * 1000)
            await _current(clients["on"])
            say(f"{start + block} turns a side: off {per_second(len(spent['off']), spent['off'])}, "
                f"on {per_second(len(spent['on']), spent['on'])} turns/s")
    rates = {side: per_second(len(ms), ms) for side, ms in spent.items()}
    return {"protocol": "history_append throughput, background off/on interleaved", "turns": len(said),
            "block": block, **{f"background_{s}": {"turns_per_second": r, "history_append_ms": latency(spent[s])}
                               for s, r in rates.items()},
            "ratio_on_off": round(rates["on"] / rates["off"], 3) if rates["off"] else None}


def table(report: dict[str, Any]) -> str:
    if "ratio_on_off" in report:
        return json.dumps(report, indent=2)
    lines = [f"{'configuration':<20}{'R@1':>8}{'R@5':>8}{'R@10':>8}{'p50 ms':>9}"]
    for mode, r in report["results"].items():
        lines.append(f"{mode:<20}{r['recall@1']:>8.3f}{r['recall@5']:>8.3f}{r['recall@10']:>8.3f}"
                     f"{r['latency_ms']['p50']:>9.1f}")
    lines += ["", "R@5 / R@10 per conversation:"]
    for mode, by in report["per_conversation"].items():
        lines.append(f"{mode:<20}" + "  ".join(f"{c} {r['recall@5']:.3f}/{r['recall@10']:.3f}" for c, r in by.items()))
    if "write" not in report:
        return "\n".join(lines)
    w = report["write"]
    lines += ["", f"history_append: background off {w['background_off']['turns_per_second']} turns/s "
                  f"(p50 {w['background_off']['history_append_ms']['p50']} ms), on {w['background_on']['turns_per_second']} "
                  f"turns/s (p50 {w['background_on']['history_append_ms']['p50']} ms): ratio {w['ratio_on_off']}",
              f"background graph current {report['background_current_after_s']} s after the last write; "
              f"build_graph after it: {report['build_graph_after_background']}"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import anyio

    parser = argparse.ArgumentParser(prog="python -m bench.turns_graph", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/locomo"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--store", type=Path, default=None, help="keep the stores here (default: a temporary folder)")
    parser.add_argument("--conversation", action="append", default=[], help="only these (sample ids, e.g. conv-26)")
    parser.add_argument("--ask-again", action="store_true",
                        help="ask the kept stores of an earlier run (--store) again, graph signal on and off")
    parser.add_argument("--throughput", type=int, default=0,
                        help="only measure history_append turns/s with the background off and on, this many turns a side")
    parser.add_argument("--side", action="append", choices=("off", "on"), default=[],
                        help="with --ask-again: only this store (default both)")
    args = parser.parse_args(argv)
    conversations = load(args.data, args.conversation)
    if not conversations:
        print(f"no conversation files in {args.data}", file=sys.stderr)
        return 2
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    with store_dir(args.store, "memtrove-graph-modes-") as data_dir:
        report = anyio.run(lambda: throughput(conversations, data_dir, say, args.throughput) if args.throughput
                           else ask_again(conversations, data_dir, say, args.side or ("off", "on"))
                           if args.ask_again else run(conversations, data_dir, say))
    text = table(report)
    print(text)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
