"""``memtrove-bench locomo|facts|passages|mixed|scale|switch|console|graph|changes``: benchmarks against a fresh ``memtrove serve`` over MCP stdio.

Not a production entrypoint: it is a client of the server, like any agent (bench/common.py starts it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

BASELINE_CONFIGS = ("BM25 alone", "vectors alone", "plain RRF")
GRAPH_CONFIGS = ("hybrid + graph 00", "hybrid + graph 05", "hybrid + graph 20")  # "memtrove hybrid": graph 0.1
DATE_CONFIGS = ("hybrid + dates 00", "hybrid + dates 30", "hybrid + dates 80")  # "memtrove hybrid": dates 0.5
BENCH_CONFIGS = {"locomo": ("memtrove hybrid", "memtrove lexical", *BASELINE_CONFIGS, *GRAPH_CONFIGS, *DATE_CONFIGS),
                 "facts": ("memtrove hybrid", "profile default", *BASELINE_CONFIGS),
                 "passages": ("memtrove hybrid", "memtrove hybrid, chunks as retrieved", *BASELINE_CONFIGS)}


def local_models(text: str) -> tuple[str, ...]:
    from config.embedders import LOCAL_MODELS

    models = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    names = tuple(LOCAL_MODELS.values())
    unknown = [m for m in models if m not in names]
    if unknown or not models:
        raise argparse.ArgumentTypeError(f"local models are {', '.join(names)} (got {text!r})")
    return models


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="memtrove-bench", description="Retrieval benchmarks of memtrove over MCP stdio.")
    suites = root.add_subparsers(dest="suite", required=True)
    turns = suites.add_parser("locomo", help="LoCoMo conversation turns: recall@k of hybrid_search over history")
    facts = suites.add_parser("facts", help="LoCoMo observations as memories: recall@k of memory_search")
    for suite, default_out in ((turns, "locomo-results.json"), (facts, "facts-results.json")):
        suite.add_argument("--data", type=Path, default=Path("../shared/locomo"),
                           help="folder of LoCoMo conversation JSON files (default ../shared/locomo)")
        suite.add_argument("--conversation", action="append", default=[], metavar="ID",
                           help="only this conversation (file stem, e.g. conv-26); repeatable")
        suite.add_argument("--out", type=Path, default=Path(default_out), help="where to write the JSON report")
    passages = suites.add_parser("passages", help="paraphrased questions over Python's library docs: "
                                                  "hit@k and MRR of hybrid_search")
    passages.add_argument("--questions", type=Path, default=None,
                          help="question set JSON (default: the one shipped with memtrove)")
    passages.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html/_sources/library"),
                          help="folder of the corpus documents (Debian's python3-doc)")
    passages.add_argument("--split", choices=("dev", "test", "all"), default="all", help="which questions")
    passages.add_argument("--max-docs", type=int, default=None, help="a quick run on this many documents")
    passages.add_argument("--out", type=Path, default=Path("passages-results.json"),
                          help="where to write the JSON report")
    mixed = suites.add_parser("mixed", help="conversations, their facts and documents in one store against each "
                                            "collection alone: R@10 alone, mixed and their ratio")
    mixed.add_argument("--data", type=Path, default=Path("../shared/locomo"),
                       help="folder of LoCoMo conversation JSON files (default ../shared/locomo)")
    mixed.add_argument("--conversation", action="append", default=[], metavar="ID",
                       help="only this conversation (file stem, e.g. conv-26); repeatable")
    mixed.add_argument("--questions", type=Path, default=None,
                       help="passages question set JSON (default: the one shipped with memtrove)")
    mixed.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html/_sources/library"),
                       help="folder of its documents (Debian's python3-doc)")
    mixed.add_argument("--doc-chars", type=int, default=400_000,
                       help="characters of documents taken, with their questions (default 400,000)")
    mixed.add_argument("--store", type=Path, default=None, metavar="DIR",
                       help="keep the four stores here (a second run only searches); default: a temporary folder")
    mixed.add_argument("--out", type=Path, default=Path("mixed-results.json"), help="where to write the JSON report")
    scale = suites.add_parser("scale", help="a store grown over MCP to each size asked (stand-in embedder): "
                                            "search latency and CPU, raw index work, ingest rate, disk, RSS")
    scale.add_argument("--chunks", type=int, action="append", required=True, metavar="N",
                       help="measure when the store holds N chunks; repeatable (grown in steps)")
    scale.add_argument("--store", type=Path, default=None, metavar="DIR",
                       help="keep the store here; a later run grows it further (default: a temporary folder)")
    scale.add_argument("--dimensions", type=int, default=256, help="the stand-in embedder's (default 256)")
    scale.add_argument("--queries", type=int, default=100, help="hybrid_search calls at each size (default 100)")
    scale.add_argument("--concurrency", type=int, default=2, help="artifact_ingest calls at a time (default 2)")
    scale.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html/_sources"),
                       help="folder of the documentation sources (Debian's python3-doc)")
    scale.add_argument("--data", type=Path, default=Path("../shared/locomo"), help="LoCoMo folder (optional)")
    scale.add_argument("--out", type=Path, default=Path("scale-results.json"), help="where to write the JSON report")
    switch = suites.add_parser("switch", help="a store built with one local model served with the other: the "
                                              "background switch's wall time and the searches answered during it")
    switch.add_argument("--chunks", type=int, default=10000, help="chunks in the store switched (default 10000)")
    switch.add_argument("--from", dest="before", type=local_models, default=("minilm",), metavar="MODEL",
                        help="the model the store is built with (default minilm)")
    switch.add_argument("--to", dest="after", type=local_models, default=("e5-small",), metavar="MODEL",
                        help="the model the store switches to (default e5-small)")
    switch.add_argument("--store", type=Path, default=None, metavar="DIR",
                        help="keep the built store here: a second run switches a copy of it again")
    switch.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html/_sources"),
                        help="folder of the documentation sources (Debian's python3-doc)")
    switch.add_argument("--pace", type=float, default=1.0, metavar="SECONDS",
                        help="seconds between two searches during the switch (default 1)")
    switch.add_argument("--out", type=Path, default=Path("switch-results.json"), help="where to write the JSON report")
    for name, suite in (("locomo", turns), ("facts", facts), ("passages", passages)):
        suite.add_argument("--store", type=Path, default=None, metavar="DIR",
                           help="keep the stored data here (a second run finds it stored and only searches); "
                                "default: a temporary folder")
        suite.add_argument("--config", action="append", default=[], choices=sorted(BENCH_CONFIGS[name]),
                           help="only this search configuration; repeatable (default: all, baselines included)")
        suite.add_argument("--models", type=local_models, default=(), metavar="A,B",
                           help="run the whole benchmark once per local model, in this run, each on a store "
                                "of its own (<store>/<model>): e.g. minilm,e5-small")
    log = suites.add_parser("changes", help="memory_changes on a big change log (SQLite)")
    log.add_argument("--events", type=int, default=100_000, help="changes in the log (default 100,000)")
    log.add_argument("--queries", type=int, default=30, help="questions of each kind (default 30)")
    log.add_argument("--out", type=Path, default=Path("changes-results.json"), help="where to write the JSON report")
    walk = suites.add_parser("graph", help="get_related's walk on a big knowledge graph (SQLite)")
    walk.add_argument("--entities", type=int, default=100_000, help="entities (default 100,000)")
    walk.add_argument("--relations", type=int, default=1_000_000, help="random relations (default 1,000,000)")
    walk.add_argument("--walks", type=int, default=30, help="walks at each depth (default 30)")
    walk.add_argument("--out", type=Path, default=Path("graph-results.json"), help="where to write the JSON report")
    console = suites.add_parser("console", help="the memtrove command and the page, timed as a user runs them")
    what = console.add_subparsers(dest="what", required=True)
    folder = what.add_parser("folder", help="memtrove ingest of a folder on the default model, then again")
    folder.add_argument("--docs", type=Path, default=Path("/usr/share/doc/python3.11/html/_sources/library"),
                        help="the folder's source (default: Python's library documentation, python3-doc)")
    folder.add_argument("--files", type=int, default=300, help="files taken from it, by name (default 300)")
    folder.add_argument("--store", type=Path, default=None, metavar="DIR", help="keep the data dir here")
    folder.add_argument("--out", type=Path, default=Path("console-folder.json"), help="where to write the JSON report")
    docs = suites.add_parser("ingest", help="Python's library documents through artifact_ingest on the local model "
                             "(MEMTROVE_LOCAL_MODEL): seconds per MB, pieces/s, both cores' use")
    docs.add_argument("--docs", type=int, default=None, help="the first N documents of the corpus (default: all 90)")
    docs.add_argument("--concurrency", type=int, default=2, help="artifact_ingest calls at a time (default 2)")
    docs.add_argument("--before", type=Path, default=None, metavar="DIR", help="another checkout, run alternately")
    docs.add_argument("--rounds", type=int, default=1, help="runs of each tree (default 1)")
    docs.add_argument("--reingest", action="store_true", help="then each document again, one paragraph added")
    docs.add_argument("--out", type=Path, default=Path("ingest-results.json"), help="where to write the JSON report")
    kept = what.add_parser("store", help="export, import and the page's render times on a memtrove-bench scale store")
    kept.add_argument("--store", type=Path, required=True, metavar="DIR", help="a store memtrove-bench scale built")
    kept.add_argument("--dimensions", type=int, default=256, help="its stand-in embedder's (default 256)")
    kept.add_argument("--requests", type=int, default=40, help="GETs of each page (default 40)")
    kept.add_argument("--out", type=Path, default=Path("console-store.json"), help="where to write the JSON report")
    return root


def run_bench(args: argparse.Namespace) -> int:
    if args.suite == "changes":
        from bench import changes

        return changes.main(args.events, args.queries, args.out)
    if args.suite == "graph":
        from bench import graph

        return graph.main(args.entities, args.relations, args.walks, args.out)
    if args.suite == "console":
        from bench import console

        if args.what == "folder":
            return console.folder(args.docs, args.files, args.out, args.store)
        return console.store(args.store, args.dimensions, args.requests, args.out)
    if args.suite == "ingest":
        from bench import ingest

        return ingest.main(args.docs, args.concurrency, args.before, args.rounds, args.out, args.reingest)
    if args.suite == "scale":
        from bench import scale

        return scale.main(args.chunks, args.store, args.out, args.dimensions, args.queries, args.concurrency,
                          args.docs, args.data)
    if args.suite == "switch":
        from bench import switch

        if args.before == args.after:
            print("memtrove-bench switch: --from and --to must name two different models", file=sys.stderr)
            return 2
        return switch.main(args.chunks, args.before[0], args.after[0], args.store, args.out, args.docs, args.pace)
    if args.suite == "mixed":
        from bench import mixed, passages

        return mixed.main(args.data, args.conversation, args.questions or passages.QUESTIONS, args.docs,
                          args.doc_chars, args.store, args.out)
    if args.suite == "passages":
        from bench import passages

        return passages.main(args.questions or passages.QUESTIONS, args.docs, args.split, args.out, args.config,
                             args.max_docs, args.store, args.models)
    if args.suite == "facts":
        from bench import facts

        return facts.main(args.data, args.out, args.conversation, args.config, args.store, args.models)
    from bench import turns

    return turns.main(args.data, args.out, args.conversation, args.config, args.store, args.models)


def main(argv: list[str] | None = None) -> int:
    return run_bench(parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
