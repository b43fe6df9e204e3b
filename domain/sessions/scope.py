"""Spec 001's session and agent memory, as artifacts filed by scope (labels): types, scope, views.

A session memory is an artifact of source system ``sessions`` whose labels name its memory type,
session, iteration, agent, task and category: found by every search of memtrove, re-embedded and
repaired with the rest. Its id is derived from its scope and its content, so the same content
stored again in the same scope is the same memory (spec 001's duplicate detection).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from domain.model import Artifact, ArtifactChunk
from domain.validation import optional_text, require_text

SOURCE = "sessions"
ORCHESTRATOR = "main-orchestrator"
MAX_CONTENT = 500_000  # characters (spec 001)


@dataclass(frozen=True, slots=True)
class MemoryKind:
    chunked: bool  # cut into sections by the Markdown chunker (else kept whole)
    orchestrator: bool  # agent_id is always ORCHESTRATOR
    session_scoped: bool = True


KINDS = {
    "session_context": MemoryKind(chunked=False, orchestrator=True),
    "input_prompt": MemoryKind(chunked=False, orchestrator=True),
    "system_memory": MemoryKind(chunked=False, orchestrator=False),
    "report": MemoryKind(chunked=True, orchestrator=False),
    "report_observation": MemoryKind(chunked=False, orchestrator=False),
    "working_memory": MemoryKind(chunked=True, orchestrator=False),
    "knowledge_base": MemoryKind(chunked=True, orchestrator=False, session_scoped=False),
}
SCOPE_FIELDS = ("session_id", "session_iter", "agent_id", "task_code", "category")


def iteration_order(session_iter: str | None) -> str | None:
    """A key that sorts iterations naturally: "v2" before "v10" (numbers compared as numbers)."""
    if session_iter is None:
        return None
    # ASCII digits only ("²" is a digit to str.isdigit but not to int); a number sorts by its length,
    # then its digits, so any length compares as a number.
    return "".join(f"{len(part.lstrip('0') or '0'):04d}{part.lstrip('0') or '0'}" if part.isascii() and part.isdigit()
                   else part.lower() for part in re.split(r"([0-9]+)", session_iter))


def scope_filter(memory_type: str | None = None, **scope: object) -> dict[str, str]:
    """Label filters from optional scope arguments, each checked (a blank value is an error, None: any)."""
    labels = {"memory_type": memory_type} if memory_type else {}
    for name in SCOPE_FIELDS:
        value = optional_text(name, scope.get(name), 200, label=name)
        if value is not None:
            labels[name] = value
    return labels


def first_heading(content: str) -> str | None:
    """A Markdown document's title: its first ATX heading's text."""
    found = heading_of(content)
    return found[1] if found else None


def heading_of(content: str) -> tuple[int, str] | None:
    """A Markdown document's first ATX heading: its level and its text."""
    match = re.search(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", content, re.MULTILINE)
    return (len(match.group(1)), match.group(2).strip()[:500]) if match else None


@dataclass(frozen=True, slots=True)
class SessionMemory:
    """A whole session memory as spec 001's results show it."""

    artifact: Artifact
    content: str
    accessed_at: str
    access_count: int

    @property
    def labels(self) -> dict[str, Any]:
        return self.artifact.labels


def session_label(artifact: Artifact, name: str) -> str | None:
    value = artifact.labels.get(name)
    return value if isinstance(value, str) else None


def header_path(chunk: ArtifactChunk) -> str:
    """Spec 001's ``"# Title > ## Section"``: the chunker's heading path, each heading at its own level."""
    return heading_line(chunk, len(chunk.metadata.get("heading_path") or []))


def heading_line(chunk: ArtifactChunk, depth: int) -> str:
    """The first ``depth`` headings of the chunk's path as ``"# Title > ## Section"``."""
    titles = [str(t) for t in chunk.metadata.get("heading_path") or []]
    levels = chunk.metadata.get("heading_levels")
    if not (isinstance(levels, list) and len(levels) == len(titles)):
        # Chunks cut before the chunker kept every level know only their section heading's own: an
        # enclosing heading is taken to be one level above the next, never below 1.
        levels, below = [0] * len(titles), section_level(chunk) or len(titles)
        for i in range(len(titles) - 1, -1, -1):
            levels[i] = max(1, below if i == len(titles) - 1 else min(i + 1, below - 1))
            below = levels[i]
    return " > ".join(f"{'#' * int(d)} {t}" for d, t in zip(levels[:depth], titles[:depth]))


def section_level(chunk: ArtifactChunk) -> int:
    """The level (1-6) of the heading that opens the chunk's section; 0 before any heading."""
    anchor = str(chunk.metadata.get("section_anchor") or "")
    match = re.match(r"h(\d):", anchor)
    return int(match.group(1)) if match else 0


def chunk_type(chunk: ArtifactChunk) -> str:
    """``code_block`` or ``table`` for a fenced block or table alone; ``section`` when a heading opens
    it; else ``text``."""
    kind = chunk.metadata.get("kind")
    if kind == "code":
        return "code_block"
    if kind == "table":
        return "table"
    return "section" if re.match(r"\s{0,3}#{1,6}[ \t]", chunk.content) else "text"


def section_key(chunk: ArtifactChunk) -> tuple[str, ...]:
    """MEDIUM granularity's section: the first two titles of the heading path (H1 > H2)."""
    return tuple(str(t) for t in (chunk.metadata.get("heading_path") or [])[:2])


def check_content(content: object) -> str:
    return require_text("content", content, MAX_CONTENT)
