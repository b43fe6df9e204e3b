"""Spec 004's goal-driven reads: project search (with the canonical boost), context packs, restore bundles.

All deterministic: the same store and the same input give the same output (ties fall to document
order or ids), and every budget is a hard limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from domain.common import Clock, utc_now
from domain.documents.model import KINDS, SOURCE, Section
from domain.documents.usecases import ReadCanonical, in_order, shown
from domain.errors import ValidationError
from domain.ports import Tokenizer
from domain.ports.documents import DocumentStore, ItemVersion
from domain.search.lexical import analyse
from domain.search.passages import Passage, PassageSearch
from domain.search.usecases import check_flag
from domain.validation import format_ts, require_int, require_text

CANONICAL_BOOST = 0.15  # spec 004 Part 2: weight of the virtual rank (1 for canonical items, 1000 otherwise)
BOOST_K = 60
RECENT_TROUBLESHOOTING = (30, 5)  # days, items


def check_kinds(value: object) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(k in KINDS for k in value):
        raise ValidationError("kinds", f"kinds must be a non-empty list of: {', '.join(KINDS)}")
    return sorted(set(value))


def item_of(passage: Passage) -> str:
    return str(passage.artifact.source_id or "").rsplit("/", 1)[-1]  # "<project>/<item id>"; a project may hold "/"


@dataclass(frozen=True, slots=True)
class ProjectSearch:
    """Hybrid search over the project's current item versions; canonical items get spec 004's boost."""

    search: PassageSearch
    boost: float = CANONICAL_BOOST

    def __call__(self, project: str, query: object, kinds: object = None, include_archived: object = False,
                 limit: object = 20) -> list[tuple[Passage, float]]:
        text = require_text("query", query, 1_000, label="query")
        wanted = check_kinds(kinds)
        count = require_int("limit", limit, 1, 100)
        where: dict[str, Any] = {"source_system": SOURCE, "project": project}
        if not check_flag("includeArchived", include_archived):
            where["status"] = "active"
        if wanted:
            where["kind"] = wanted[0] if len(wanted) == 1 else {"$in": wanted}
        found = self.search(text, where, count * 2)
        scored = [(p, rank_score(n) + self.boost / (BOOST_K + (1 if p.artifact.labels.get("canonical_key") else 1000)))
                  for n, p in enumerate(found)]
        scored.sort(key=lambda pair: (-pair[1], pair[0].artifact.id))
        return scored[:count]


def rank_score(position: int) -> float:
    """The fused ranking's order as an RRF-like score, so the boost is added on the same scale."""
    return 1.0 / (BOOST_K + position + 1)


@dataclass(frozen=True, slots=True)
class ContextPack:
    """The sections of a canonical document most relevant to a goal, whole, in document order, within
    ``maxChars``: ranked by the best passage similarity of the document's chunks in each section, then
    by how many of the goal's words the section holds, then by position."""

    read: ReadCanonical
    search: PassageSearch

    def __call__(self, project: str, canonical_key: object, goal: object, max_chars: object = 8000
                 ) -> tuple[ItemVersion, list[tuple[Section, str]], int]:
        aim = require_text("goal", goal, 2_000, label="goal")
        budget = require_int("maxChars", max_chars, 1, 1_000_000)
        version = self.read.version(project, canonical_key)
        sections = self.read.outline(version)
        where = {"source_system": SOURCE, "project": project, "canonical_key": version.canonical_key}
        best: dict[str, float] = {}
        for passage in self.search(aim, where, 50, per_artifact=50):
            if passage.chunk is None:
                continue
            for s in sections:
                if s.start <= passage.chunk.start_char < s.end:
                    best[s.anchor] = max(best.get(s.anchor, 0.0), passage.similarity)
        words = set(analyse(aim).words)
        order = {s.anchor: n for n, s in enumerate(sections)}

        def relevance(s: Section) -> tuple[float, int, int]:
            text = version.content[s.start:s.end].lower()
            return (-best.get(s.anchor, 0.0), -sum(1 for w in words if w in text), order[s.anchor])
        chosen: set[str] = set()
        used = 0
        for s in sorted(sections, key=relevance):
            size = s.end - s.start
            if size and used + size <= budget and (best.get(s.anchor) or relevance(s)[1] < 0):
                chosen.add(s.anchor)
                used += size
        picked = in_order(sections, chosen)
        return version, [(s, version.content[s.start:s.end]) for s in picked], used


@dataclass(frozen=True, slots=True)
class Restore:
    """Spec 004 Part 8's bundle: pinned canonical documents, the latest session snapshot (the newest
    item committed with a sessionId), troubleshooting of the last 30 days (up to 5), then the goal's
    best matches; at most ``maxItems`` entries, within ``maxChars`` and ``maxTokens``. An entry that
    does not fit whole is cut at a paragraph boundary (``truncated``) or left out."""

    documents: DocumentStore
    search: ProjectSearch
    tokenizer: Tokenizer
    clock: Clock = utc_now

    def __call__(self, project: str, goal: object = None, kinds: object = None, max_items: object = 12,
                 max_chars: object = 30_000, include_canonical: object = True,
                 include_recent_troubleshooting: object = True, max_tokens: object = None) -> dict[str, Any]:
        aim = None if goal is None else require_text("goal", goal, 2_000, label="goal")
        wanted = check_kinds(kinds)
        items = require_int("maxItems", max_items, 1, 100)
        chars = require_int("maxChars", max_chars, 1, 1_000_000)
        tokens = None if max_tokens is None else require_int("maxTokens", max_tokens, 1, 1_000_000)
        candidates: list[tuple[str, ItemVersion]] = []
        if check_flag("includeCanonical", include_canonical):
            candidates += [("pinned_canonical", v) for v in self.documents.latest_items(project, pinned_only=True)
                           if v.canonical_key]
        sessions = [v for v in self.documents.latest_items(project, limit=500) if v.session_id]
        candidates += [("latest_snapshot", v) for v in sorted(sessions, key=lambda v: (v.created_at, v.item_id))[-1:]]
        if check_flag("includeRecentTroubleshooting", include_recent_troubleshooting):
            days, limit = RECENT_TROUBLESHOOTING
            now = datetime.fromisoformat(self.clock().replace("Z", "+00:00")).astimezone(timezone.utc)
            candidates += [("recent_troubleshooting", v) for v in self.documents.latest_items(
                project, kinds=["troubleshooting"], since=format_ts(now - timedelta(days=days)), limit=limit)]
        if aim is not None:
            for passage, _ in self.search(project, aim, wanted, False, items):
                version = self.documents.item_version(project, item_of(passage))
                if version is not None:
                    candidates.append(("goal_match", version))
        return self._bundle(candidates, wanted, items, chars, tokens, aim)

    def _bundle(self, candidates: list[tuple[str, ItemVersion]], kinds: list[str] | None, items: int, chars: int,
                tokens: int | None, goal: str | None) -> dict[str, Any]:
        entries: list[dict[str, Any]] = []
        seen: set[str] = set()
        used_chars = used_tokens = 0
        for reason, v in candidates:
            if v.item_id in seen or (kinds and v.kind not in kinds) or len(entries) >= items:
                continue
            seen.add(v.item_id)
            text, cut = fit(v.content, chars - used_chars)
            while tokens is not None and text and used_tokens + self.tokenizer.count(text) > tokens:
                text, cut = fit(text, len(text) // 2)
            if not text:
                continue
            used_chars += len(text)
            used_tokens += self.tokenizer.count(text) if tokens is not None else 0
            entries.append({**shown(v), "reason": reason, "content": text, "truncated": cut,
                            "provenance": {"project": v.project, "itemId": v.item_id, "versionNum": v.version_num,
                                           "createdAt": v.created_at, "uri": f"memtrove://items/{v.item_id}"}})
        return {"goal": goal, "entries": entries, "totalChars": used_chars,
                "totalTokens": used_tokens if tokens is not None else None}


def fit(text: str, room: int) -> tuple[str, bool]:
    """The text whole if it fits ``room`` characters, else its longest prefix ending at a paragraph
    break (a line break, then a space) that fits; empty when under 200 characters would remain."""
    if len(text) <= room:
        return text, False
    if room < 200:
        return "", True
    for mark in ("\n\n", "\n", " "):
        cut = text.rfind(mark, 0, room)
        if cut > 0:
            return text[:cut], True
    return text[:room], True
