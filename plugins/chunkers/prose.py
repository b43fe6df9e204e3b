"""The prose of a Markdown or reStructuredText text, as a graph build reads it (domain/graph/prose.py).

A reader of names and sentences must not read code, tables, directives or markup: in documentation
they are most of what looks like a name ("= Perm", "Color'>", "Description |"). The text comes back
the same length, every character that is not prose blanked (line breaks kept), so a chunk's part of
it is the same slice as the chunk's text.

- Blocks: only paragraphs and list items are prose. Headings, code (fenced, indented, literal blocks
  after ``::``, code directives, doctest ``>>>`` blocks), tables, HTML blocks, reST explicit markup
  (directive lines and their options, comments, link targets, substitution definitions) are blanked.
- Inline: code spans, reST roles and literals, images, URLs, HTML tags, substitutions and footnote
  references are blanked; a link keeps its text; emphasis, list and quote markers, field-list names
  and a paragraph's closing ``::`` are blanked, the words they mark kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from plugins.chunkers.markdown import _leaves, _line_starts, markdown_parser

_PROSE_TYPES = {"paragraph_open"}
_LINE_BREAK = re.compile(r"\r\n?|\n")
# Inline markup of both markups: matched spans are blanked, a link's text (group "keep") kept.
_MARKDOWN_INLINE = re.compile(
    r"(?P<code>(`+)[\s\S]+?\2)"  # a code span (it may go on over a line break)
    r"|!\[[^\]]*\]\([^)]*\)"  # an image
    r"|\[(?P<keep>[^\]\n]+)\](?:\([^)\n]*\)|\[[^\]\n]*\])"  # a link: its text is prose
    r"|\[\^[^\]\n]+\]"  # a footnote reference
    r"|<[A-Za-z/!][^>\n]*>"  # an HTML tag, an autolink
    r"|https?://\S+"
    r"|(?<!\w)[*_~]+|[*_~]+(?!\w)"  # emphasis markers
)
_RST_INLINE = re.compile(
    r"(?::[\w:.+-]+:)?`[^`\n]*`(?::[\w:.+-]+:)(?!_)"  # a role: :func:`name`, `name`:func:
    r"|:[\w:.+-]+:`[^`\n]*`"
    r"|``[^`\n]+``"  # an inline literal
    r"|`(?P<keep>[^`<\n]+?)\s*(?:<[^>\n]*>)?`__?"  # a link: its text is prose
    r"|`[^`\n]+`"  # interpreted text (the default role: in Sphinx documentation, code)
    r"|\|[^|\n]+\|_{0,2}"  # a substitution reference
    r"|\[(?:#\w*|\*|\d+|[A-Za-z][\w.-]*)\]_"  # a footnote or citation reference
    r"|https?://\S+"
    r"|<[^>\n]*>"
    r"|(?<!\w)\*+|\*+(?!\w)"  # emphasis markers
)
_LIST_MARKER = re.compile(r"^([ \t]*)((?:[-*+•]|\d+[.)]|#\.|[a-zA-Z][.)])[ \t]+|>[ \t]?)+")
_FIELD = re.compile(r"^[ \t]*:[^:`\s][^:`]*:(?=\s|$)")  # a field list's name (":param key:")
_EXPLICIT = re.compile(r"^([ \t]*)\.\.(?:[ \t]|$)")  # a directive, comment, target or substitution definition
_OPTION = re.compile(r"^[ \t]+:[\w -]+:(?:[ \t].*)?$")  # a directive's option
_RULE = re.compile(r"^[ \t]*[!-/:-@\[-`{-~]{3,}[ \t]*$")  # a transition, a table border, an underline
_TABLE_ROW = re.compile(r"^[ \t]*\||\|.*\|")
_DOCTEST = re.compile(r"^[ \t]*(>>>|\.\.\.)(?:[ \t]|$)")


def blank(text: str) -> str:
    """``text`` with every character but line breaks as a space."""
    return _LINE_BREAK.sub(lambda m: m.group(), re.sub(r"[^\r\n]", " ", text))


def _inline(line: str, pattern: re.Pattern[str]) -> str:
    def replace(found: re.Match[str]) -> str:
        kept = found.group("keep")
        return kept + " " * (len(found.group()) - len(kept)) if kept else blank(found.group())

    return pattern.sub(replace, line)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def markdown_prose(text: str) -> str:
    """The prose of a Markdown text: its paragraphs (in lists and quotes too), inline markup blanked."""
    md = markdown_parser()
    line_start, count = _line_starts(text)
    spans: list[tuple[int, int]] = []
    for token, _, _ in _leaves(md.parse(text, {})):
        if token.type in _PROSE_TYPES and token.map:
            first, last = token.map
            spans.append((line_start(first), line_start(last) if last < count else len(text)))
    return _assemble(text, spans, _markdown_block)


def _markdown_block(block: str) -> str:
    lines = [blank(line) if _TABLE_ROW.search(line) or _RULE.match(line) else _unmarked(line) for line in _lines(block)]
    return _inline("".join(lines), _MARKDOWN_INLINE)


def _unmarked(line: str) -> str:
    """A line without its list or quote markers (their indentation kept)."""
    return _LIST_MARKER.sub(lambda m: m.group(1) + blank(m.group()[len(m.group(1)):]), line)


def rst_prose(text: str, blocks: Iterable[tuple[int, int, str]]) -> str:
    """The prose of a reST text, given its blocks (start, end, kind: plugins/chunkers/rst.py): text
    blocks without explicit markup, doctest blocks or tables; inline markup blanked."""
    spans = [(start, end) for start, end, kind in blocks if kind == "text"]
    return _assemble(text, spans, _rst_block)


def _rst_block(block: str) -> str:
    lines = _lines(block)
    if lines and _DOCTEST.match(lines[0]):
        return blank(block)
    out: list[str] = []
    markup_indent: int | None = None  # inside explicit markup: its indentation, and whether a body may follow
    body = False
    for line in lines:
        bare = line.rstrip("\r\n")
        indent = len(bare) - len(bare.lstrip(" \t"))
        if markup_indent is not None and bare.strip() and indent > markup_indent:
            if not body or _OPTION.match(bare):  # a comment's or target's text, a directive's options
                out.append(blank(line))
                continue
            markup_indent = None  # a directive's body: prose
        elif markup_indent is not None and bare.strip():
            markup_indent = None
        found = _EXPLICIT.match(bare)
        if found:
            markup_indent, body = len(found.group(1)), "::" in bare
            out.append(blank(line))
            continue
        if _RULE.match(bare) or _TABLE_ROW.match(bare) or _DOCTEST.match(bare):
            out.append(blank(line))
            continue
        line = _FIELD.sub(lambda m: blank(m.group()), line)
        line = _inline(_unmarked(line), _RST_INLINE)
        if bare.rstrip().endswith("::"):  # "For example::" introduces a literal block
            cut = len(line.rstrip("\r\n").rstrip())
            line = line[:cut - 1] + " " + line[cut:]
        out.append(line)
    return "".join(out)


def _assemble(text: str, spans: list[tuple[int, int]], read: Callable[[str], str]) -> str:
    """``text`` blanked outside ``spans``, each span as ``read`` gives it (the same length)."""
    parts: list[str] = []
    at = 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        parts.append(blank(text[at:start]))
        piece = text[start:end]
        prose = read(piece)
        if len(prose) != len(piece):
            raise ValueError("a prose reader changed the text's length")
        parts.append(prose)
        at = end
    parts.append(blank(text[at:]))
    return "".join(parts)
