"""The ``memtrove`` command: ``memtrove serve [--transport stdio|http] [--host H] [--port P]``, ``memtrove doctor
[--rebuild-vectors]``, ``memtrove bench locomo|facts|passages``.

``memtrove serve`` over stdio is, by default (MEMTROVE_SHARED), a bridge to the one server that owns
the data dir (entrypoints/bridge.py), started on demand as the hidden ``memtrove serve --owner``
(entrypoints/owner.py); MEMTROVE_SHARED=false serves in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from loguru import logger

from config.logging import configure_logging
from config.settings import Settings, load_settings
from domain.errors import ConfigurationError, MemtroveError

BASELINE_CONFIGS = ("BM25 alone", "vectors alone", "plain RRF")
BENCH_CONFIGS = {"locomo": ("memtrove hybrid", "memtrove lexical", *BASELINE_CONFIGS),
                 "facts": ("memtrove hybrid", "profile default", *BASELINE_CONFIGS),
                 "passages": ("memtrove hybrid", *BASELINE_CONFIGS)}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="memtrove", description="memtrove: a memory server for AI agents (MCP).")
    commands = root.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--transport", choices=["stdio", "http"], default=None,
                       help="stdio (default, or MEMTROVE_TRANSPORT) or streamable HTTP at /mcp/")
    serve.add_argument("--host", default=None, help="HTTP bind address (default MEMTROVE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="HTTP port (default MCP_PORT or 3000)")
    serve.add_argument("--owner", action="store_true", help=argparse.SUPPRESS)  # the shared server, run by a bridge
    doctor = commands.add_parser("doctor", help="check that the vector index holds what the store holds")
    doctor.add_argument("--rebuild-vectors", action="store_true",
                        help="rebuild the vector index from the vectors kept in the store (no re-embedding)")
    bench = commands.add_parser("bench", help="run a benchmark against a fresh server over MCP stdio")
    suites = bench.add_subparsers(dest="suite", required=True)
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
    for name, suite in (("locomo", turns), ("facts", facts), ("passages", passages)):
        suite.add_argument("--store", type=Path, default=None, metavar="DIR",
                           help="keep the stored data here (a second run finds it stored and only searches); "
                                "default: a temporary folder")
        suite.add_argument("--config", action="append", default=[], choices=sorted(BENCH_CONFIGS[name]),
                           help="only this search configuration; repeatable (default: all, baselines included)")
    return root


def run_bench(args: argparse.Namespace) -> int:
    if args.suite == "passages":
        from entrypoints.bench import passages

        return passages.main(args.questions or passages.QUESTIONS, args.docs, args.split, args.out, args.config,
                             args.max_docs, args.store)
    if args.suite == "facts":
        from entrypoints.bench import facts

        return facts.main(args.data, args.out, args.conversation, args.config, args.store)
    from entrypoints.bench import turns

    return turns.main(args.data, args.out, args.conversation, args.config, args.store)


def memtrove_command() -> list[str]:
    """The installed ``memtrove`` console script of this interpreter's environment (else ``python -m``)."""
    script = Path(sys.executable).parent / "memtrove"
    return [str(script)] if script.exists() else [sys.executable, "-m", "entrypoints"]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings()
        configure_logging(settings.log_level, settings.memtrove_log_format)
        if args.command == "doctor":
            from entrypoints.doctor import run_doctor

            return run_doctor(settings, args.rebuild_vectors)
        if args.command == "bench":
            return run_bench(args)
        if args.command == "serve":
            transport = args.transport or settings.memtrove_transport
            if args.owner:
                from entrypoints.owner import run_owner

                return run_owner(settings)
            if transport == "stdio" and settings.memtrove_shared:
                from entrypoints.bridge import run_bridge

                return run_bridge(settings)
            return serve(settings, transport,
                         args.host or settings.memtrove_host,
                         settings.mcp_port if args.port is None else args.port)
    except (ConfigurationError, MemtroveError) as exc:
        print(f"memtrove: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def serve(settings: Settings, transport: str, host: str, port: int) -> int:
    """Serve in this process: stdio when not shared, or HTTP (which owns the data dir as a shared server does)."""
    from entrypoints.mcp_server import build_server
    from entrypoints.runtime import Runtime
    from entrypoints.shared import data_dir_of, holding, uses_data_dir

    held = contextlib.ExitStack()
    if transport == "http":
        settings.check_serving(host)
        if uses_data_dir(settings):  # refused while another server owns the data dir
            held.enter_context(holding(data_dir_of(settings), {"kind": "http", "url": f"http://{host}:{port}/mcp/"}))
    with held:
        runtime = Runtime(settings)
        runtime.start()
        server = build_server(runtime)
        try:
            if transport == "stdio":
                # The store check runs in the background right after the handshake (the client spawns us
                # and waits); a mismatch ends the process with its message. When the client leaves
                # first, it is reported here.
                logger.debug("serving transport=stdio")
                server.run("stdio")
                runtime.check_store()
            else:
                runtime.check_store()
                import uvicorn

                from entrypoints.http import build_http_app

                app = build_http_app(server, runtime, host)
                logger.info("serving transport=http url=http://{}:{}/mcp", host, port)
                uvicorn.run(app, host=host, port=port, log_config=None, log_level="warning", access_log=False)
        finally:
            runtime.shutdown()
    return 0
