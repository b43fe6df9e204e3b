"""The read-back after a load run: what is lost, phantom, stale or partial, and what search cannot find.

After the load, ``verify`` waits for ingests still running in the background, reads everything
back (paging with ``cursor``/``next_cursor`` when the tools offer it, else from the SQL store
directly), judges each item, then searches for every live item through each replica, and for
every deleted or replaced one that must not come back. ``converge`` re-ingests every artifact
first: what is known must come back unchanged, what was cut off is written again.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.load_records import (
    ABSENT, GOOD, SOURCE_SYSTEM, ArtifactEntry, Expect, Ledger, artifact_hits, first_word, hit_ids,
)
from tests.support.mcp_procs import http_session

EXAMPLES = 8  # ids kept per kind of problem in the report
SETTLE_TIMEOUT = 300.0  # seconds to wait for ingests under way (a dead replica's job waits out its lease)
SIMILAR = 0.999  # a vector hit this close is the very text searched for (fake embeddings are random otherwise)


class ToolFailed(RuntimeError):
    """A verification call answered with a tool error."""


async def call_ok(session: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    if result.is_error:
        raise ToolFailed(f"{tool}: " + " ".join(getattr(b, "text", "") for b in result.content))
    return result.structured_content or {}


async def pooled(url: str, jobs: Sequence[Callable[[Any], Awaitable[None]]], concurrency: int,
                 token: str | None = None) -> None:
    """Run each job (given a connected client) on ``concurrency`` sessions to ``url``."""
    queue: asyncio.Queue[Callable[[Any], Awaitable[None]]] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker() -> None:
        async with http_session(url, token) as session:
            while not queue.empty():
                await queue.get_nowait()(session)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(jobs))))))


# ------------------------------------------------------------------------------------ read back

async def page(session: Any, tool: str, args: dict[str, Any], key: str, max_pages: int = 10_000) -> list[dict]:
    """Every item of a list tool, following ``next_cursor``."""
    items: list[dict[str, Any]] = []
    cursor, seen = None, set()
    for _ in range(max_pages):
        data = await call_ok(session, tool, {**args, **({"cursor": cursor} if cursor else {})})
        items += data.get(key, [])
        cursor = data.get("next_cursor")
        if not cursor:
            return items
        if cursor in seen:
            raise ToolFailed(f"{tool}: next_cursor {cursor!r} came back twice")
        seen.add(cursor)
    raise ToolFailed(f"{tool}: more than {max_pages} pages")


def _sql_state(db_url: str, ledger: Ledger) -> tuple[dict[str, tuple[str, str]], dict[tuple[str, int], str]]:
    """Fallback read-back straight from the SQL store (while the list tools cannot page)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            memories = {first_word(c): (i, c) for i, c in conn.execute(
                text("SELECT id, content FROM memories WHERE content LIKE :p"), {"p": ledger.prefix + "%"})}
            turns = {(conv, idx): c for conv, idx, c in conn.execute(
                text("SELECT conversation_id, turn_index, content FROM turns WHERE conversation_id LIKE :p"),
                {"p": ledger.run + "%"})}
    finally:
        engine.dispose()
    return memories, turns


async def _tool_state(session: Any, ledger: Ledger, paging: dict[str, bool]
                      ) -> tuple[dict[str, tuple[str, str]], dict[tuple[str, int], str], bool]:
    """Read-back through the tools: complete with paging, else only the newest items (then ``complete`` is False)."""
    complete = True
    if paging["memory_list"]:
        listed = await page(session, "memory_list", {"limit": 100}, "results")
    else:
        listed = []
        for kind in ("preference", "fact", "project", "decision"):
            got = (await call_ok(session, "memory_list", {"type": kind, "limit": 100}))["results"]
            complete &= len(got) < 100
            listed += got
    memories = {first_word(h["content"]): (h["id"], h["content"]) for h in listed
                if h["content"].startswith(ledger.prefix)}
    turns: dict[tuple[str, int], str] = {}
    for conv in sorted(ledger.conversations):
        if paging["history_get"]:
            got = await page(session, "history_get", {"conversation_id": conv, "limit": 50}, "turns")
        else:
            got = (await call_ok(session, "history_get", {"conversation_id": conv, "limit": 50}))["turns"]
            complete &= len(got) < 50
        turns.update({(conv, t["turn_index"]): t["content"] for t in got})
    return memories, turns, complete


def _job(data: dict[str, Any]) -> dict[str, Any]:
    """The ingest under way (or failed) that an artifact_get answer shows, if any."""
    return data.get("new_version") or ({} if "metadata" in data else data)


async def settle(ledger: Ledger, url: str, token: str | None = None, concurrency: int = 4,
                 timeout: float = SETTLE_TIMEOUT) -> dict[str, Any]:
    """Wait until no artifact has an ingest under way (accepted ingests finish in the background, and a
    crashed one is resumed once its lease runs out); report those still running and those that failed."""
    pending = dict(ledger.artifacts)
    failed: list[str] = []
    started = time.monotonic()
    while pending and time.monotonic() - started < timeout:
        still: dict[str, ArtifactEntry] = {}

        def job(source_id: str, entry: ArtifactEntry) -> Callable[[Any], Awaitable[None]]:
            async def run(session: Any) -> None:
                result = await session.call_tool("artifact_get", {"artifact_id": entry.art_id})
                under_way = {} if result.is_error else _job(result.structured_content or {})
                if under_way.get("status") == "failed":
                    failed.append(f"{entry.art_id}: {under_way.get('error', '')}"[:200])
                elif under_way:
                    still[source_id] = entry
            return run

        await pooled(url, [job(s, e) for s, e in pending.items()], concurrency, token)
        pending = still
        if pending:
            await asyncio.sleep(1.0)
    return {"seconds": round(time.monotonic() - started, 1), "unsettled": sorted(e.art_id for e in pending.values()),
            "failed": failed}


async def _artifact_state(url: str, ledger: Ledger, concurrency: int, token: str | None) -> dict[str, Any]:
    """Each artifact through artifact_get: its content (ABSENT when not found), and anything partial about it."""
    observed: dict[str, str] = {}
    partial: dict[str, str] = {}

    def job(source_id: str, entry: ArtifactEntry) -> Callable[[Any], Awaitable[None]]:
        async def run(session: Any) -> None:
            result = await session.call_tool("artifact_get", {"artifact_id": entry.art_id, "include_content": True,
                                                              "include_chunks": True})
            data = result.structured_content or {}
            if result.is_error:
                if (data.get("error") or {}).get("type") == "not_found":
                    observed[source_id] = ABSENT
                else:
                    partial[source_id] = (data.get("error") or {}).get("message", "tool error")[:200]
                return
            if "metadata" not in data:  # only an ingest under way (or failed) is known of it
                observed[source_id] = ABSENT
                return
            content, meta = data.get("content"), data["metadata"]
            observed[source_id] = content if content is not None else ABSENT
            digest = hashlib.sha256((content or "").encode()).hexdigest()
            if digest != meta["content_hash"]:
                partial[source_id] = "content does not match its content_hash"
            elif meta["is_chunked"] and len(data.get("chunks", [])) != meta["num_chunks"]:
                partial[source_id] = f"{len(data.get('chunks', []))} chunks listed, num_chunks {meta['num_chunks']}"
        return run

    await pooled(url, [job(s, e) for s, e in ledger.artifacts.items()], concurrency, token)
    return {"observed": observed, "partial": partial}


def _judge(expects: dict[Any, Expect], observed: dict[Any, str], complete: bool, kind: str,
           verdicts: Counter[str], examples: dict[str, list[str]]) -> None:
    for key, expect in expects.items():
        value = observed.get(key, ABSENT)
        verdict = expect.judge(value)
        if verdict == "lost" and not complete:
            verdict = "unverified"  # beyond what the tools could list
        verdicts[verdict] += 1
        if verdict not in GOOD:
            _example(examples, f"{kind}_{verdict}", key)
    for key in sorted(observed.keys() - expects.keys(), key=str):  # written by nobody in this run
        verdicts["phantom"] += 1
        _example(examples, f"{kind}_phantom", key)


def _example(examples: dict[str, list[str]], name: str, key: Any) -> None:
    bucket = examples.setdefault(name, [])
    if len(bucket) < EXAMPLES:
        bucket.append(str(key))


# ------------------------------------------------------------------------------- search checks

@dataclass
class SearchChecks:
    """Searches that must find every live item, and must not find deleted or replaced ones, through one URL."""

    found: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    resurfaced: Counter[str] = field(default_factory=Counter)  # deleted or replaced, yet found as itself
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, counter: Counter[str], kind: str, item: str) -> None:
        counter[kind] += 1
        if counter is not self.found:
            name = ("missing_" if counter is self.missing else "resurfaced_") + kind
            bucket = self.examples.setdefault(name, [])
            if len(bucket) < EXAMPLES:
                bucket.append(item)

    def report(self) -> dict[str, Any]:
        return {"found": dict(self.found), "missing": dict(self.missing), "resurfaced": dict(self.resurfaced),
                "errors": dict(self.errors), "examples": self.examples}


def search_jobs(ledger: Ledger, memories: dict[str, tuple[str, str]], turns: dict[tuple[str, int], str],
                artifacts: dict[str, str], checks: SearchChecks, sample: int | None, rng: random.Random
                ) -> list[Callable[[Any], Awaitable[None]]]:
    jobs: list[Callable[[Any], Awaitable[None]]] = []

    def add(fn: Callable[[Any], Awaitable[None]]) -> None:
        jobs.append(fn)

    def guarded(kind: str, fn: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        async def run(session: Any) -> None:
            try:
                await fn(session)
            except ToolFailed as exc:
                checks.errors[f"{kind}: {str(exc)[:160]}"] += 1
        return run

    def pick(items: list[Any]) -> list[Any]:
        return items if sample is None or len(items) <= sample else rng.sample(items, sample)

    for token, (mem_id, content) in pick(sorted(memories.items())):
        async def memory(session: Any, mem_id: str = mem_id, content: str = content, token: str = token) -> None:
            vector = await call_ok(session, "memory_search", {"query": content, "mode": "vector", "limit": 5})
            checks.note(checks.found if mem_id in hit_ids(vector) else checks.missing, "memory_vector", mem_id)
            lexical = await call_ok(session, "memory_search", {"query": token, "mode": "lexical", "limit": 5})
            checks.note(checks.found if mem_id in hit_ids(lexical) else checks.missing, "memory_lexical", mem_id)
        add(guarded("memory", memory))
    deleted = [(t, e) for t, e in ledger.memories.items() if e.acked == ABSENT and e.history and t in ledger.memory_ids]
    for token, expect in pick(deleted):
        content = next(v for v in expect.history if v != ABSENT)  # a memory's content never changes

        async def gone(session: Any, mem_id: str = ledger.memory_ids[token], content: str = content) -> None:
            vector = await call_ok(session, "memory_search", {"query": content, "mode": "vector", "limit": 5})
            if mem_id in hit_ids(vector):
                checks.note(checks.resurfaced, "memory_deleted", mem_id)
        add(guarded("deleted memory", gone))
    for (conv, index), content in pick(sorted(turns.items())):
        async def turn(session: Any, conv: str = conv, index: int = index, content: str = content) -> None:
            found = await call_ok(session, "hybrid_search", {
                "query": content[:500], "mode": "vector", "include_history": True, "limit": 5,
                "filters": {"conversation_id": conv}})
            turn_id = f"{conv}_turn_{index}"
            checks.note(checks.found if turn_id in hit_ids(found) else checks.missing, "turn_vector", turn_id)
        add(guarded("turn", turn))
    for source_id, entry in pick(sorted(ledger.artifacts.items())):
        current = artifacts.get(source_id, ABSENT)
        older = [v for v in entry.expect.history if v not in (ABSENT, current)]
        add(guarded("artifact", _artifact_job(entry, current, older, checks)))
    return jobs


def _artifact_job(entry: ArtifactEntry, current: str, older: list[str], checks: SearchChecks
                  ) -> Callable[[Any], Awaitable[None]]:
    """Small artifacts are found by vector (their exact text); large ones by the words of their version token."""
    async def run(session: Any) -> None:
        async def hits(content: str) -> dict[str, float]:
            if entry.large:
                args = {"query": first_word(content), "mode": "lexical", "limit": 10}
            else:
                args = {"query": content, "mode": "vector", "limit": 5}
            return artifact_hits(await call_ok(session, "artifact_search", args))

        kind = "artifact_lexical" if entry.large else "artifact_vector"
        if current != ABSENT:
            checks.note(checks.found if entry.art_id in await hits(current) else checks.missing, kind, entry.art_id)
        for old in older:
            found = await hits(old)
            if entry.art_id in found and (entry.large or found[entry.art_id] >= SIMILAR):
                checks.note(checks.resurfaced, "artifact_old_version" if current != ABSENT else "artifact_deleted",
                            entry.art_id)
    return run


# ------------------------------------------------------------------------------------ converge

async def converge(ledger: Ledger, url: str, token: str | None = None, concurrency: int = 4) -> dict[str, Any]:
    """Re-ingest every artifact: a known one must come back "unchanged"; one whose last write went unanswered
    is written again (the same content, or the delete) and must then hold exactly that."""
    statuses: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}

    def job(source_id: str, entry: ArtifactEntry) -> Callable[[Any], Awaitable[None]]:
        async def run(session: Any) -> None:
            known = entry.expect.certain
            target = entry.expect.acked if known else entry.expect.maybe[-1]
            if target == ABSENT:
                if not known:
                    result = await session.call_tool("artifact_delete", {"artifact_id": entry.art_id})
                    kind = ((result.structured_content or {}).get("error") or {}).get("type")
                    statuses["redeleted" if not result.is_error or kind == "not_found" else "delete_failed"] += 1
                    entry.expect.ack(ABSENT)
                return
            result = await session.call_tool("artifact_ingest", {
                "artifact_type": "doc" if entry.large else "note", "source_system": SOURCE_SYSTEM,
                "source_id": source_id, "content": target})
            data = result.structured_content or {}
            if result.is_error:
                status = "error"
            else:
                # A known artifact comes back unchanged (or still indexing, when its ingest went on in the background).
                done = not known or data["status"] in ("unchanged", "indexing")
                status = data["status"] if done else f"known_but_{data['status']}"
                entry.expect.ack(target)
            statuses[status] += 1
            if status.startswith("known_but") or status == "error":
                text = " ".join(getattr(c, "text", "") for c in result.content)[:300] if result.is_error else ""
                examples.setdefault(status, []).append(f"{entry.art_id} {text}".strip())
        return run

    await pooled(url, [job(s, e) for s, e in sorted(ledger.artifacts.items())], concurrency, token)
    return {"statuses": dict(statuses), "examples": {k: v[:EXAMPLES] for k, v in examples.items()}}


# --------------------------------------------------------------------------------------- verify

async def verify(ledger: Ledger, urls: Sequence[str], *, db_url: str | None = None, token: str | None = None,
                 concurrency: int = 4, sample: int | None = None, seed: int = 0) -> dict[str, Any]:
    """Wait for background ingests, read everything back through ``urls[0]`` and judge it, then run the
    search checks through every URL."""
    settled = await settle(ledger, urls[0], token, concurrency)
    async with http_session(urls[0], token) as session:
        schemas = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        paging = {tool: "cursor" in schemas[tool].get("properties", {}) for tool in ("memory_list", "history_get")}
        if all(paging.values()) or db_url is None:
            memories, turns, complete = await _tool_state(session, ledger, paging)
            method = "cursor" if all(paging.values()) else "tools_without_paging"
        else:
            memories, turns = await asyncio.to_thread(_sql_state, db_url, ledger)
            complete, method = True, "sql"
    arts = await _artifact_state(urls[0], ledger, concurrency, token)
    verdicts: dict[str, Counter[str]] = {k: Counter() for k in ("memories", "turns", "artifacts")}
    examples: dict[str, list[str]] = {}
    _judge(ledger.memories, {t: c for t, (_, c) in memories.items()}, complete, "memory", verdicts["memories"],
           examples)
    _judge(ledger.turns, turns, complete, "turn", verdicts["turns"], examples)
    _judge({s: e.expect for s, e in ledger.artifacts.items()}, arts["observed"], True, "artifact",
           verdicts["artifacts"], examples)
    if arts["partial"]:
        examples["artifact_partial"] = [f"{s}: {m}" for s, m in list(arts["partial"].items())[:EXAMPLES]]
    live_artifacts = {s: c for s, c in arts["observed"].items() if c != ABSENT}
    searches: dict[str, Any] = {}
    for url in urls:
        checks = SearchChecks()
        jobs = search_jobs(ledger, memories, turns, live_artifacts, checks, sample, random.Random(seed))
        await pooled(url, jobs, concurrency, token)
        searches[url] = checks.report()
    return {
        "settle": settled,
        "read_back": {"method": method, "complete": complete, "paging": paging,
                      **{k: dict(v) for k, v in verdicts.items()}, "artifacts_partial": len(arts["partial"])},
        "examples": examples,
        "search": searches,
    }
