"""The ``memtrove`` commands for people: ingest, search, list, show, delete, stats. Each parses its
arguments, calls the data dir's server's tools (entrypoints/console/connection.py) and prints their
answer: the tool's own text, or with ``--json`` its structured answer. Exit status 0, 1 when the
server refuses or fails, 2 on bad usage (argparse's, and bad input the server names a field of)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio

from config.settings import Settings
from domain.errors import MemtroveError, ValidationError
from domain.model import ARTIFACT_TYPES, MEMORY_TYPES
from entrypoints.console.connection import CommandFailed, answer, connected
from entrypoints.console.importers import FORMATS as FOREIGN
from entrypoints.fatal import say_fatal

COMMANDS = ("ingest", "search", "list", "show", "delete", "stats", "export", "import")
POSITIONAL = ("path", "paths", "PATH", "id", "query")  # arguments without an option name to show
MODES = ("hybrid", "vector", "lexical")



def add_parsers(commands: Any) -> None:
    def command(name: str, help: str) -> argparse.ArgumentParser:
        made = commands.add_parser(name, help=help, description=help)
        made.add_argument("--json", action="store_true", help="print the structured answer as JSON")
        return made

    ingest = command("ingest", "store files and folders, one artifact per file (unchanged files are skipped)")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (folders follow .gitignore)")
    ingest.add_argument("--type", dest="artifact_type", choices=ARTIFACT_TYPES, default="doc",
                        help="artifact type of every file (default doc)")
    ingest.add_argument("--source-system", default="files", help="source system of the artifacts (default files)")
    ingest.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="only files matching this glob (gitignore style, below the folder); repeatable")
    ingest.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="leave out files matching this glob; repeatable")
    ingest.add_argument("--sync", action="store_true",
                        help="also delete the artifacts of files gone from the folders named")
    ingest.add_argument("--quiet", action="store_true", help="no progress, only the summary")
    search = command("search", "hybrid search over memories, conversations and documents")
    search.add_argument("query", help="what to look for (1-500 characters)")
    search.add_argument("--mode", choices=MODES, default="hybrid", help="hybrid (default), vector or lexical")
    search.add_argument("--limit", type=int, default=10, help="hits, 1-50 (default 10)")
    search.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                        help="a filter of hybrid_search (artifact_type, source_system, conversation_id, ...); "
                             "repeatable")
    listing = command("list", "list memories (default) or artifacts, newest first")
    listing.add_argument("kind", nargs="?", choices=("memories", "artifacts"), default="memories")
    listing.add_argument("--type", help=f"memory type ({', '.join(MEMORY_TYPES)}) or artifact type "
                                        f"({', '.join(ARTIFACT_TYPES)})")
    listing.add_argument("--source-system", help="artifacts of this source system only")
    listing.add_argument("--limit", type=int, default=20, help="items a page (memories 1-100, artifacts 1-500)")
    listing.add_argument("--cursor", help="next_cursor of the previous page")
    show = command("show", "show one memory (mem_...), artifact (art_...) or conversation (its id)")
    show.add_argument("id")
    delete = command("delete", "delete one memory (mem_...) or artifact (art_...)")
    delete.add_argument("id")
    command("stats", "what the store holds, its size on disk, embedding profile and index backlog")
    exporting = command("export", "write what you stored to a file (memtrove's JSON Lines export format)")
    exporting.add_argument("path", metavar="PATH", help="the file to write (replaced when the export completes); "
                                                        "with --format markdown, a new or empty folder")
    exporting.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl",
                           help="jsonl (default: what import reads) or markdown (one readable file per memory, "
                                "conversation and artifact)")
    importing = command("import", "read a memtrove export file back in (what is stored already adds nothing)")
    importing.add_argument("path", metavar="PATH", help="a file written by memtrove export (or, with --from, "
                                                        "another tool's file or folder)")
    importing.add_argument("--from", dest="origin", choices=FOREIGN, default=None,
                           help="another tool's format: reference (the MCP reference memory server's memory.jsonl "
                                "or memory.json), mcp-memory-service (its SQLite database), markdown (a "
                                "basic-memory or Obsidian folder), claude or chatgpt (conversations.json of "
                                "their data exports)")


def run_command(settings: Settings, args: argparse.Namespace) -> int:
    try:
        structured, text = anyio.run(_dispatch, settings, args)
    except (MemtroveError, BaseExceptionGroup) as raised:
        exc = first_error(raised)
        if exc is None:
            raise
        if isinstance(exc, ValidationError):
            # An option's name helps find it; a positional argument's message names its value itself.
            named = exc.field in exc.message or exc.field in POSITIONAL
            say_fatal(exc.message if named else f"{exc.field}: {exc.message}")
            return 2
        say_fatal(exc.message)
        return 1
    try:
        if args.json:
            print(json.dumps(structured, indent=2, ensure_ascii=False))
        elif text:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # memtrove list | head: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


async def _dispatch(settings: Settings, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    async with connected(settings) as client:
        if args.command == "ingest":
            from entrypoints.console.ingest import ingest
            from entrypoints.console.progress import Progress

            summary = await ingest(client, args.paths, args.artifact_type, args.source_system, args.include,
                                   args.exclude, args.sync, Progress(quiet=args.quiet or args.json))
            return summary.as_dict(), summary.text()
        if args.command == "search":
            return await answer(client, "hybrid_search", query=args.query, mode=args.mode, limit=args.limit,
                                filters=filters(args.filter) or None, include_memory=True, include_history=True)
        if args.command == "list":
            if args.kind == "artifacts":
                listed = await answer(client, "artifact_list", artifact_type=args.type, limit=args.limit,
                                      source_system=args.source_system, cursor=args.cursor)
            else:
                listed = await answer(client, "memory_list", type=args.type, limit=args.limit, cursor=args.cursor)
            return listed[0], listing_text(listed, args)
        if args.command == "show":
            if args.id.startswith("mem_"):
                return await answer(client, "memory_get", memory_id=args.id)
            if args.id.startswith("art_"):
                return await answer(client, "artifact_get", artifact_id=args.id, include_content=True)
            return await conversation(client, args.id)
        if args.command == "delete":
            if args.id.startswith("mem_"):
                return await answer(client, "memory_delete", memory_id=args.id)
            if args.id.startswith("art_"):
                return await answer(client, "artifact_delete", artifact_id=args.id)
            raise ValidationError("id", f"delete takes a memory id (mem_...) or an artifact id (art_...), "
                                        f"got {args.id!r}")
        if args.command in ("export", "import"):
            from entrypoints.console.progress import Progress
            from entrypoints.console.transfer import export, restore

            try:
                if args.command == "export":
                    return await export(client, args.path, Progress(quiet=args.json), args.format == "markdown")
                return await restore(client, args.path, Progress(quiet=args.json), args.origin)
            except OSError as exc:  # a folder missing, no permission, a full disk
                raise ValidationError("path", path_problem(args.command, args.path, exc)) from None
        stats, _ = await answer(client, "store_stats")
        return stats, stats_text(stats)


async def conversation(client: Any, conversation_id: str) -> tuple[dict[str, Any], str]:
    """Every turn of a conversation the caller may see, oldest first (history_get's pages, read back)."""
    turns: list[dict[str, Any]] = []
    cursor = None
    while True:
        page, _ = await answer(client, "history_get", conversation_id=conversation_id, limit=50, cursor=cursor)
        turns = page["turns"] + turns
        cursor = page.get("next_cursor")
        if not cursor:
            break
    if not turns:  # another caller's conversation reads as a missing one, and so does an unknown id
        raise CommandFailed(f"no conversation {conversation_id!r} that you may read")
    text = "\n".join(f"[{t['turn_index']}] {t['role']}: {t['content']}" for t in turns)
    return {"conversation_id": conversation_id, "count": len(turns), "turns": turns}, text


def first_error(raised: BaseException) -> MemtroveError | None:
    """The MemtroveError a command failed with, out of the task groups' exception groups around it."""
    if isinstance(raised, MemtroveError):
        return raised
    if isinstance(raised, BaseExceptionGroup):
        for inner in raised.exceptions:
            if (found := first_error(inner)) is not None:
                return found
    return None


def listing_text(listed: tuple[dict[str, Any], str], args: argparse.Namespace) -> str:
    """A list tool's text, its "call again with cursor=" said as this command's own option."""
    structured, text = listed
    cursor = structured.get("next_cursor")
    lines = [line for line in text.splitlines() if "cursor=" not in line]
    if cursor:
        kind = " artifacts" if args.kind == "artifacts" else ""
        lines.append(f"More: memtrove list{kind} --cursor {cursor}")
    return "\n".join(lines)


def stats_text(stats: dict[str, Any]) -> str:
    """``memtrove stats`` for people: what is stored, how big, and the embedding's health."""
    memories = stats.get("memories", {})
    artifacts = stats.get("artifacts", {})
    embedding = stats.get("embedding", {})
    lines = [f"memories:      {sum(memories.values())}" + (f" ({', '.join(f'{n} {k}' for k, n in memories.items())})"
                                                         if memories else ""),
             f"conversations: {stats.get('conversations', 0)} ({stats.get('turns', 0)} turns)",
             f"artifacts:     {sum(artifacts.get('by_type', {}).values())}"
             + (f" ({', '.join(f'{n} {k}' for k, n in artifacts['by_type'].items())})" if artifacts.get("by_type")
                else "") + f", {stats.get('chunks', 0)} chunks",
             f"oldest/newest: {stats.get('oldest') or '-'} / {stats.get('newest') or '-'}"]
    if "database_bytes" in stats:
        lines.append(f"on disk:       {megabytes(stats['database_bytes'])} database, "
                     f"{megabytes(stats.get('data_dir_bytes', 0))} data dir")
    if embedding:
        lines.append(f"embedding:     {embedding.get('provider')} {embedding.get('model')} "
                     f"({embedding.get('dimensions')} dimensions), {embedding.get('api_status', 'unknown')}")
    return "\n".join(lines)


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def path_problem(command: str, path: str, exc: OSError) -> str:
    """Why ``path`` could not be written or read, naming the user's path (never a temporary file's)."""
    reason = exc.strerror or str(exc)
    target = os.path.abspath(path)
    if command == "export" and not os.path.isdir(os.path.dirname(target)):
        return f"cannot write {path}: its folder {os.path.dirname(target)} does not exist"
    verb = "write" if command == "export" else "read"
    return f"cannot {verb} {path}: {reason}"


def filters(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as hybrid_search's filters (a value that reads as JSON is taken as such)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError("--filter", f"--filter takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out
