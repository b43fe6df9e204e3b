"""The reStructuredText chunker: the markdown chunker's sections and packing over reST's own blocks.

Sphinx documentation, Python's among it, is written in reST, whose section titles Markdown does not
see (a ``~~~~`` underline even opens a Markdown code fence). Here:

- A section title is a line of text (not indented, after a blank line or at the start) underlined,
  and optionally overlined, by one punctuation character repeated at least as long as the title.
  Levels follow the order in which title styles first appear (reST's own rule; an overlined style
  differs from the same character underlined only), deeper than 6 counts as 6.
- Blocks are runs of non-blank lines, each owning the blank lines after it, so they tile the text.
- Literal text is code and never cut: the indented lines after a paragraph ending in ``::``, and
  the body of a code directive (``code-block``, ``doctest``...). Other directives' bodies (a
  function's description, a note, even though its line ends in ``::``) are prose. Grid and simple tables are tables, never cut.
- Sections, packing, overlap and metadata (``heading_path``, ``section_anchor``) are the markdown
  chunker's, so a reST chunk carries the titles of the sections it sits in.

One pass over the lines; the text is tokenized once, so the cost is linear in its size.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from domain.chunker_choice import rst_title_at
from domain.ports import Chunker
from plugins.chunkers.markdown import Block, MarkdownChunker
from plugins.hookspecs import hookimpl

_GRID_TABLE = re.compile(r"[ \t]*\+[-=+]{2,}\+[ \t]*")
_SIMPLE_TABLE = re.compile(r"[ \t]*=+( +=+)+[ \t]*")
_ROLE = re.compile(r":[\w:.-]+:`([^`<]*?)\s*(?:<[^>]*>)?`")  # :mod:`json` -> json
_DIRECTIVE = re.compile(r"[ \t]*\.\.[ \t]+([\w:-]+)::")
CODE_DIRECTIVES = frozenset({"code", "code-block", "sourcecode", "doctest", "testcode", "testoutput",
                             "literalinclude", "productionlist", "highlight", "parsed-literal", "testsetup",
                             "testcleanup"})


class RstChunker(MarkdownChunker):
    name = "rst"
    version = "2"

    def blocks(self, text: str) -> list[Block]:
        return rst_blocks(text)

    def prose(self, text: str) -> str:
        """``text`` with all but its prose blanked, same length (domain.graph.prose.ProseReader)."""
        from plugins.chunkers.prose import rst_prose

        return rst_prose(text, ((b.start, b.end, b.kind) for b in rst_blocks(text)))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def plain(title: str) -> str:
    """A title as read: roles by their text (``:mod:`json``` -> ``json``), no inline-literal backticks."""
    return _ROLE.sub(r"\1", title).replace("``", "").strip()


def rst_blocks(text: str) -> list[Block]:
    """The blocks of ``text`` in order; their spans tile ``[0, len(text))``."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return [Block(0, len(text), "text")]
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    bare = [line.rstrip("\r\n") for line in lines]
    styles: list[str] = []
    heads: list[tuple[int, str, int, str]] = []  # (first line, kind, level, title)
    literal_after: int | None = None  # indentation a literal block must exceed, while one may follow
    in_literal: int | None = None  # the indentation the literal block in progress exceeds
    i = 0
    while i < len(bare):
        line = bare[i]
        if not line.strip():
            i += 1
            continue
        if in_literal is not None and _indent(line) > in_literal:  # still inside the literal block
            i += 1
            continue
        in_literal = None
        starts_block = i == 0 or not bare[i - 1].strip()
        if not starts_block:
            i += 1
            continue
        if literal_after is not None and _indent(line) > literal_after:
            heads.append((i, "code", 0, ""))
            in_literal, literal_after = literal_after, None
            i += 1
            continue
        literal_after = None
        title = rst_title_at(bare, i)
        if title is not None:
            taken, style, text_of_title = title
            if style not in styles:
                styles.append(style)
            heads.append((i, "heading", min(6, styles.index(style) + 1), plain(text_of_title)))
            i += taken
            continue
        kind = "table" if _GRID_TABLE.fullmatch(line) or _SIMPLE_TABLE.fullmatch(line) else "text"
        heads.append((i, kind, 0, ""))
        end = i
        while end + 1 < len(bare) and bare[end + 1].strip():
            end += 1
        directive = _DIRECTIVE.match(line)
        literal = not line.lstrip().startswith("..") and bare[end].rstrip().endswith("::")  # "Example::"
        if (directive and directive.group(1).lower() in CODE_DIRECTIVES) or literal:
            literal_after = _indent(line)
        i = end + 1
    if not heads:
        heads.append((0, "text", 0, ""))
    elif heads[0][0] != 0:  # leading blank lines belong to the first block, not to a block of their own
        heads[0] = (0, *heads[0][1:])
    ends = [offsets[first] for first, *_ in heads[1:]] + [len(text)]
    return [Block(offsets[first], end, kind, level, title)
            for (first, kind, level, title), end in zip(heads, ends)]


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(RstChunker())
