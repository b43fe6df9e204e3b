"""What a load run records: the ledger of every write and what each item may hold, call figures, failures.

Every item a client writes (memory, turn, artifact) has an ``Expect``: the value of its last
acknowledged write, the values of writes whose answer never came (the connection died: either
outcome is acceptable) and the values of writes the server refused (which must never show).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ABSENT = "\x00absent"  # the value of an item that is not (or no longer) stored
GOOD = ("ok", "unacknowledged")  # verdicts that break no promise
SOURCE_SYSTEM = "load"


@dataclass
class Expect:
    """What one item may hold after the load."""

    acked: str = ABSENT
    maybe: list[str] = field(default_factory=list)  # unanswered writes, oldest first
    failed: set[str] = field(default_factory=set)
    history: list[str] = field(default_factory=list)  # every acknowledged value, oldest first

    def attempt(self, value: str) -> None:
        self.maybe.append(value)

    def ack(self, value: str) -> None:
        # One client writes a key, one call at a time: an earlier unanswered write cannot land later.
        self.acked, self.maybe = value, []
        self.history.append(value)

    def fail(self, value: str) -> None:
        if value in self.maybe:
            self.maybe.remove(value)
        self.failed.add(value)

    @property
    def certain(self) -> bool:
        return not self.maybe

    def judge(self, observed: str) -> str:
        if observed == self.acked:
            return "ok"
        if observed in self.maybe:
            return "unacknowledged"
        if observed in self.failed:
            return "failed_write_visible"
        if observed == ABSENT:
            return "lost"
        return "phantom" if self.acked == ABSENT else "stale"


@dataclass
class ArtifactEntry:
    art_id: str
    large: bool
    expect: Expect = field(default_factory=Expect)
    indexing: bool = False  # its last ingest was answered "indexing": accepted, visible once complete


@dataclass
class Ledger:
    """Everything every client of one run wrote, keyed by what the client chose (token, turn, source id)."""

    run: str
    memories: dict[str, Expect] = field(default_factory=dict)  # by the memory's token
    memory_ids: dict[str, str] = field(default_factory=dict)  # token -> id, once acknowledged
    turns: dict[tuple[str, int], Expect] = field(default_factory=dict)
    artifacts: dict[str, ArtifactEntry] = field(default_factory=dict)  # by source_id
    conversations: set[str] = field(default_factory=set)

    @property
    def prefix(self) -> str:
        """Every token of this run starts so (contents start with their token)."""
        return f"zq{self.run}"


def first_word(content: str) -> str:
    return content.split(" ", 1)[0]


def hit_ids(data: dict[str, Any]) -> list[str]:
    return [h["id"] for h in data.get("results", [])]


def artifact_hits(data: dict[str, Any]) -> dict[str, float]:
    """Artifact id -> its best hit's similarity (0 for a lexical hit); chunk hits name their artifact."""
    found: dict[str, float] = {}
    for h in data.get("results", []):
        art = h.get("artifact_id") or h["id"].split("::", 1)[0]
        found[art] = max(found.get(art, 0.0), h.get("similarity") or 0.0)
    return found


@dataclass
class Outage:
    url: str
    start: float
    end: float | None = None

    def covers(self, url: str, started: float, failed: float) -> bool:
        return url == self.url and failed >= self.start and (self.end is None or started <= self.end)


@dataclass
class Failure:
    """A call (or a connection attempt) the transport ended without an answer."""

    url: str
    tool: str
    started: float
    failed: float
    message: str


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    by_op: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)  # "tool: normalised message"
    error_samples: dict[str, str] = field(default_factory=dict)
    tool_errors: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    anomalies: Counter[str] = field(default_factory=Counter)  # broken promises seen during the load
    statuses: Counter[str] = field(default_factory=Counter)  # "operation: status" of answered writes

    def answered(self, tool: str, label: str, seconds: float, error: str | None) -> None:
        self.latency[tool].append(seconds)
        self.by_op[label].append(seconds)
        if error is not None:
            key = f"{tool}: {normalise(error)}"
            self.errors[key] += 1
            self.tool_errors[tool] += 1
            self.error_samples.setdefault(key, error[:2000])


def percentiles(samples: Sequence[float]) -> dict[str, float | int]:
    """n, p50, p95 and max in milliseconds from seconds."""
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


def normalise(message: str) -> str:
    """An error message with its ids, numbers and SQL elided, so equal failures count together."""
    line = message.strip().splitlines()[0] if message.strip() else "(empty)"
    line = re.sub(r"\[SQL:.*", "", line)
    line = re.sub(r"(mem|art)_[0-9a-f]{32}(::chunk::\S+)?", r"\1_<id>", line)
    line = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", line)
    line = re.sub(r"zq[0-9a-z]+", "<token>", line)
    line = re.sub(r"'[^']*'", "'<...>'", line)  # quoted values (source ids...) differ call by call
    line = re.sub(r"\b\d+(\.\d+)?\b", "#", line)
    return line.strip()[:200]
