"""The markdown chunker: heading-aware chunks that never cut a fenced code block or a table.

markdown-it-py (CommonMark with GFM tables) finds the leaf blocks. Each block owns its source lines
and the blank lines after it, so the blocks tile the text exactly whatever it holds (plain prose,
reStructuredText, binary-looking noise). A top-level heading opens a section; a section's blocks
are packed into chunks of at most ``spec.target_tokens`` and no chunk spans two sections.

- Code (fenced or indented) and tables are never cut: one longer than the target is a chunk of its
  own, marked ``kind: "code"`` or ``kind: "table"``; so is any chunk that is exactly one of them.
- A paragraph (list item, HTML block...) longer than the target is cut with ``token_windows``,
  together with the small blocks before it when those hold no code or table.
- Overlap stays inside a section: the chunk after a full one starts up to ``spec.overlap_tokens``
  tokens back (never inside code or a table, never so far that it passes the target); the first
  chunk of a section starts exactly at its heading line.
- Metadata: ``heading_path`` (titles of the enclosing headings, outermost first), their
  ``heading_levels`` (1-6, same order) and ``section_anchor``: ``h{level}:`` (the section heading's
  own level, 1-6) and the slugs of the path joined by ``.``; a repeated anchor gets ``-2``,
  ``-3``... Text before the first heading has ``heading_path: []``, ``heading_levels: []`` and
  anchor ``h0:``. Headings nested in lists or quotes are text.

The text is tokenized once; block sizes are counted by bisecting the token starts, so the cost is
linear in the text's size.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from domain.chunking import content_hash, token_windows
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker
from plugins.chunkers.base import StructureChunker
from plugins.hookspecs import hookimpl

ATOMIC = ("code", "table")
_CONTAINERS = {"bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"}
_KINDS = {"fence": "code", "code_block": "code", "table_open": "table", "heading_open": "heading"}
_NEWLINE = re.compile(r"\r\n?|\n")  # the line breaks markdown-it normalises to "\n"
_NON_SLUG = re.compile(r"[\W_]+")
Span = tuple[int, int, "str | None"]


class MarkdownChunker(StructureChunker):
    name = "markdown"
    version = "1"

    def cut(self, text: str, spec: ChunkSpec, starts: list[int]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for blocks, metadata in sections(self.blocks(text)):
            for start, end, kind in pack(text, blocks, starts, spec):
                piece = text[start:end]
                count = bisect_left(starts, end) - bisect_left(starts, start)
                meta = {**metadata, "heading_path": list(metadata["heading_path"]),
                        "heading_levels": list(metadata["heading_levels"])}
                if kind is not None:
                    meta["kind"] = kind
                chunks.append(Chunk(index=len(chunks), start_char=start, end_char=end, content=piece,
                                    token_count=max(1, count), content_hash=content_hash(piece), metadata=meta))
        return chunks

    def blocks(self, text: str) -> list["Block"]:
        """The text's leaf blocks, tiling it (a subclass reads another markup: plugins/chunkers/rst.py)."""
        return parse_blocks(text)

    def prose(self, text: str) -> str:
        """``text`` with all but its prose blanked, same length (domain.graph.prose.ProseReader)."""
        from plugins.chunkers.prose import markdown_prose

        return markdown_prose(text)


@dataclass(frozen=True, slots=True)
class Block:
    """A leaf block's source lines with the blank lines after it: ``text[start:end]``."""

    start: int
    end: int
    kind: str  # "heading" (top level only), "code", "table" or "text"
    level: int = 0
    title: str = ""


@functools.cache
def markdown_parser() -> Any:
    """The one markdown-it parser (CommonMark, GFM tables), built on first use."""
    from markdown_it import MarkdownIt  # on demand: keeps the server's start fast

    # Block structure only: inline markup is parsed for heading titles alone.
    return MarkdownIt("commonmark").enable("table").disable("inline")


def parse_blocks(text: str) -> list[Block]:
    """The leaf blocks of ``text`` in order; their spans tile ``[0, len(text))``."""
    md, env = markdown_parser(), {}
    line_start, lines = _line_starts(text)
    heads: list[list[Any]] = []  # [offset, kind, level, title]; the first always starts at 0
    last_line = -1
    for token, kind, inline in _leaves(md.parse(text, env)):
        line = token.map[0]
        if line <= last_line or line >= lines:  # cannot happen in CommonMark; stay whole if it does
            if heads and kind in ATOMIC and heads[-1][1] == "text":
                heads[-1][1] = kind
            continue
        level, title = (int(token.tag[1:]), _title(md, inline, env)) if kind == "heading" else (0, "")
        heads.append([line_start(line) if heads else 0, kind, level, title])
        last_line = line
    if not heads:
        return [Block(0, len(text), "text")]
    ends = [head[0] for head in heads[1:]] + [len(text)]
    return [Block(start, end, kind, level, title) for (start, kind, level, title), end in zip(heads, ends)]


def _line_starts(text: str) -> tuple[Callable[[int], int], int]:
    """Where each line starts (lines as markdown-it counts them), and how many lines there are."""
    if "\r" in text:
        starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        return starts.__getitem__, len(starts)
    lengths = [0, *accumulate(map(len, text.split("\n")))]  # C speed for the common case
    return lambda line: lengths[line] + line, len(lengths) - 1


def _leaves(tokens: Sequence[Any]) -> Iterator[tuple[Any, str, Any]]:
    """(token, kind, inline child) of each leaf block; containers are looked through, not yielded."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.nesting == 1 and token.map and token.type not in _CONTAINERS:
            kind = _KINDS.get(token.type, "text")
            if kind == "heading" and token.level > 0:
                kind = "text"
            closer, j = token.type[:-5] + "_close", i + 1
            while j < len(tokens) and not (tokens[j].type == closer and tokens[j].level == token.level):
                j += 1
            yield token, kind, tokens[i + 1] if i + 1 < len(tokens) else None
            i = j
        elif token.nesting == 0 and token.map and token.type != "inline":
            yield token, _KINDS.get(token.type, "text"), None
        i += 1


def _title(md: Any, inline: Any, env: dict[str, Any]) -> str:
    """A heading's plain text: its inline markup parsed, text and code kept, breaks as spaces."""
    if inline is None or inline.type != "inline":
        return ""
    parts: list[str] = []

    def collect(tokens: Sequence[Any]) -> None:
        for token in tokens:
            if token.type in ("text", "text_special", "code_inline"):
                parts.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif token.children:
                collect(token.children)  # an image's alt text

    collect(md.inline.parse(inline.content, md, env, []))
    return " ".join("".join(parts).split())


def slug(title: str) -> str:
    """Lowercase letters and digits (any script), other runs as "-", at most 40 characters."""
    text = _NON_SLUG.sub("-", unicodedata.normalize("NFKC", title).lower()).strip("-")
    return text[:40].rstrip("-") or "section"


def sections(blocks: Sequence[Block]) -> Iterator[tuple[list[Block], dict[str, Any]]]:
    """Runs of blocks under one heading, each with its heading path and unique section anchor."""
    stack: list[tuple[int, str]] = []
    seen: dict[str, int] = {}  # anchor -> the last suffix tried for it (keeps repeats linear)
    current: list[Block] = []
    metadata: dict[str, Any] = {"heading_path": [], "heading_levels": [], "section_anchor": "h0:"}
    for block in blocks:
        if block.kind == "heading":
            if current:
                yield current, metadata
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            base = f"h{block.level}:" + ".".join(slug(title) for _, title in stack)
            anchor, n = base, seen.get(base, 1)
            while anchor in seen:
                n += 1
                anchor = f"{base}-{n}"
            seen[base] = n
            seen.setdefault(anchor, 1)
            current, metadata = [], {"heading_path": [title for _, title in stack],
                                     "heading_levels": [level for level, _ in stack], "section_anchor": anchor}
        current.append(block)
    if current:
        yield current, metadata


@dataclass(slots=True)
class _Open:
    """The chunk being filled: where it starts and ends, its tokens and the code/tables it holds."""

    start: int
    end: int
    tokens: int
    atomic: list[tuple[int, int]] = field(default_factory=list)
    only: str | None = None  # the kind of its one block, when it is exactly one block

    def add(self, block: Block, tokens: int) -> None:
        self.only = block.kind if self.start == self.end == block.start else None
        self.end, self.tokens = block.end, self.tokens + tokens
        if block.kind in ATOMIC:
            self.atomic.append((block.start, block.end))

    def span(self) -> Span:
        return self.start, self.end, self.only if self.only in ATOMIC else None


def pack(text: str, blocks: Sequence[Block], starts: Sequence[int], spec: ChunkSpec) -> list[Span]:
    """One section's chunks as ``(start, end, kind)``: see the module docstring for the rules."""
    target = spec.target_tokens
    count: Callable[[int, int], int] = lambda a, b: bisect_left(starts, b) - bisect_left(starts, a)
    spans: list[Span] = []
    current: _Open | None = None
    for block in blocks:
        size = count(block.start, block.end)
        if current is not None and current.tokens + size <= target:
            current.add(block, size)
            continue
        if size <= target:
            if current is None:
                current = _Open(block.start, block.start, 0)
            else:
                spans.append(current.span())
                start = overlap_start(starts, current, min(spec.overlap_tokens, target - size))
                kept = [(a, b) for a, b in current.atomic if a >= start]  # code or tables in the overlap
                current = _Open(start, block.start, count(start, block.start), kept)
            current.add(block, size)
            continue
        if current is not None and (block.kind in ATOMIC or current.atomic):
            spans.append(current.span())
            current = None
        if block.kind in ATOMIC:
            spans.append((block.start, block.end, block.kind))
            continue
        begin = block.start if current is None else current.start
        first, last = bisect_left(starts, begin), bisect_left(starts, block.end)
        pieces = token_windows(text[begin:block.end], [s - begin for s in starts[first:last]], spec)
        spans.extend((begin + p.start_char, begin + p.end_char, None) for p in pieces[:-1])
        tail = begin + pieces[-1].start_char
        current = _Open(tail, block.end, count(tail, block.end))
    if current is not None:
        spans.append(current.span())
    return spans


def overlap_start(starts: Sequence[int], closed: _Open, allowed: int) -> int:
    """Where the chunk after ``closed`` starts: at most ``allowed`` tokens back, past its start,
    on a whole character and outside its code and tables; ``closed.end`` for no overlap."""
    end = closed.end
    last = bisect_left(starts, end)
    i = max(last - allowed, bisect_right(starts, closed.start))
    if allowed <= 0 or i >= last:
        return end
    if i > 0 and starts[i - 1] == starts[i]:  # tokens sharing one character move together
        i = bisect_right(starts, starts[i])
        if i >= last:
            return end
    start = starts[i]
    for a, b in closed.atomic:
        if a < start < b:
            start = b
    return min(start, end)


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(MarkdownChunker())
