"""The markdown chunker: the chunker contract, its heading/fence/table/overlap rules, generated
documents (Hypothesis) and real ones (this repository's Markdown, Python's reStructuredText docs)."""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path

import pluggy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from domain.chunk_checks import chunk_problem
from domain.errors import ValidationError
from domain.model import Chunk, ChunkSpec
from domain.artifacts.usecases import reconstruct
from plugins import hookspecs
from plugins.chunkers import markdown
from plugins.chunkers.markdown import MarkdownChunker, slug
from plugins.testing import ChunkerContract, SimpleTokenizer

REPO = Path(__file__).resolve().parents[2]
PYTHON_DOCS = sorted({p.resolve() for p in Path("/usr/share/doc").glob("python3*/html/_sources")})  # python3-doc
SAMPLES = [
    "Some front text before any heading.\n\n# Spec\n\nIntro *with* `code`.\n\n## Auth\n\n"
    "- one\n- two\n  - nested **bold**\n    1. deeper\n\n### Token refresh\n\n```python\n"
    "def refresh():\n\n    # not a heading\n    return 1\n```\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n",
    "Setext title\n============\n\nText.\n\nSecond\n------\n\n> quoted\n> # not a section\n\n"
    "    indented code\n\n***\n\n<div>\nhtml\n</div>\n",
    "# Windows\r\n\r\nline one\r\nline two\r\n\r\n## Next\r\n\r\n~~~\r\ncode\r\n~~~",
    "no trailing newline, no heading at all\n\n1. a\n2. b",
    "```\nan unclosed fence runs to the end\n\n# still code",
    "# 東京 😀 e\u0301\n\n" + "段落。" * 300 + "\n\n## Ünïcödé — “quotes”\n\n| 名 | 値 |\n|---|---|\n| 😀 | 👍🏽 |",
]


@functools.cache
def tiktoken_tokenizer():
    from adapters.text.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer()


class TestMarkdownChunker(ChunkerContract):
    @pytest.fixture
    def chunker(self):
        return MarkdownChunker()

    @pytest.fixture
    def samples(self):
        return SAMPLES


class TestMarkdownChunkerTiktoken(TestMarkdownChunker):
    @pytest.fixture
    def tokenizer(self):
        return tiktoken_tokenizer()


def run(text: str, target: int = 1000, overlap: int = 0, tokenizer=None) -> list[Chunk]:
    tokenizer = tokenizer or SimpleTokenizer()
    chunks = MarkdownChunker().chunk(text, ChunkSpec(target, overlap, target), tokenizer)
    assert chunk_problem(text, chunks) is None
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    return chunks


def sections_of(chunks: list[Chunk]) -> list[tuple[list[str], str]]:
    seen: list[tuple[list[str], str]] = []
    for chunk in chunks:
        entry = (chunk.metadata["heading_path"], chunk.metadata["section_anchor"])
        if not seen or seen[-1] != entry:
            seen.append(entry)
    return seen


def test_heading_paths_and_unique_anchors() -> None:
    text = ("Front text.\n\n# Spec\n\nIntro.\n\n## Auth\n\nA.\n\n### Token refresh\n\nR.\n\n## Auth\n\nAgain.\n\n"
            "#### Deep\n\nD.\n\nSetext *title*\n============\n\nS.\n")
    chunks = run(text)
    assert sections_of(chunks) == [
        ([], "h0:"), (["Spec"], "h1:spec"), (["Spec", "Auth"], "h2:spec.auth"),
        (["Spec", "Auth", "Token refresh"], "h3:spec.auth.token-refresh"), (["Spec", "Auth"], "h2:spec.auth-2"),
        (["Spec", "Auth", "Deep"], "h4:spec.auth.deep"), (["Setext title"], "h1:setext-title")]
    assert [c.content.split("\n")[0] for c in chunks[1:]] == [
        "# Spec", "## Auth", "### Token refresh", "## Auth", "#### Deep", "Setext *title*"]


def test_anchor_suffixes_stay_unique_against_real_headings() -> None:
    chunks = run("# A-2\n\n# A\n\n# A\n\n# A\n")
    assert [c.metadata["section_anchor"] for c in chunks] == ["h1:a-2", "h1:a", "h1:a-3", "h1:a-4"]


def test_headings_inside_lists_and_quotes_are_text() -> None:
    chunks = run("# Top\n\n- item\n  # in a list\n\n> # in a quote\n\nend\n")
    assert sections_of(chunks) == [(["Top"], "h1:top")]


@pytest.mark.parametrize(("title", "expected"), [
    ("Token refresh", "token-refresh"), ("Hello, World!", "hello-world"), ("東京 Tokyo", "東京-tokyo"),
    ("Cafe\u0301 `code_x`", "café-code-x"), ("!!!", "section"), ("", "section"), ("x" * 60, "x" * 40)])
def test_slug(title: str, expected: str) -> None:
    assert slug(title) == expected


@pytest.mark.parametrize("opening", ["```python", "~~~", "````"])
def test_a_fence_longer_than_the_target_is_one_whole_chunk(opening: str) -> None:
    fence = opening + "\n" + "".join(f"line {i} = {i}\n\n" for i in range(200)) + opening[:3] + "\n"
    text = f"# Code\n\nBefore the code.\n\n{fence}\nAfter the code.\n"
    chunks = run(text, target=20, overlap=5)
    start = text.index(fence)
    whole = [c for c in chunks if c.start_char == start and c.end_char >= start + len(fence)]
    assert len(whole) == 1 and whole[0].metadata["kind"] == "code"
    assert not [c for c in chunks if start < c.start_char < start + len(fence)], "a chunk starts inside the fence"


def test_tables_and_indented_code_are_never_cut() -> None:
    table = "| name | value |\n|------|-------|\n" + "".join(f"| row {i} | {i * i} |\n" for i in range(100))
    code = "".join(f"    x{i} = {i}\n" for i in range(100))
    text = f"Intro.\n\n{table}\nMiddle words here.\n\n{code}\nend\n"
    chunks = run(text, target=16, overlap=4)
    for block, kind in ((table, "table"), (code, "code")):
        start = text.index(block)
        holders = [c for c in chunks if c.start_char <= start and start + len(block) <= c.end_char]
        assert [c.metadata.get("kind") for c in holders] == [kind]


def test_nested_fences_and_tables_are_never_cut() -> None:
    fence = "  ```\n" + "".join(f"  nested {i}\n" for i in range(80)) + "  ```\n"
    text = f"# List\n\n- an item with code:\n\n{fence}\n- another item\n\n> | a | b |\n> |---|---|\n> | 1 | 2 |\n"
    chunks = run(text, target=12, overlap=3)
    start = text.index(fence)
    assert any(c.start_char <= start and start + len(fence) <= c.end_char for c in chunks)
    assert not [c for c in chunks if start < c.start_char < start + len(fence)]


def test_a_long_paragraph_is_cut_into_windows_inside_the_document() -> None:
    paragraph = " ".join(f"word{i}" for i in range(500))
    text = f"# First\n\nShort.\n\n## Long\n\n{paragraph}\n\n## Last\n\nTail.\n"
    chunks = run(text, target=50, overlap=10)
    long = [c for c in chunks if c.metadata["heading_path"] == ["First", "Long"]]
    assert len(long) >= 10 and long[0].content.startswith("## Long")
    assert all(c.token_count <= 50 for c in chunks)
    assert all(b.start_char < a.end_char for a, b in zip(long, long[1:])), "windows of one paragraph overlap"


def test_overlap_stays_inside_a_section_and_sections_start_at_their_heading() -> None:
    body = "\n\n".join(f"Paragraph {i} has a handful of plain words in it." for i in range(12))
    text = f"# One\n\n{body}\n\n# Two\n\n{body}\n"
    chunks = run(text, target=40, overlap=8)
    two = text.index("# Two")
    assert [c.start_char for c in chunks if c.metadata["heading_path"] == ["Two"]][0] == two
    for a, b in zip(chunks, chunks[1:]):
        if b.start_char < a.end_char:
            assert a.metadata["heading_path"] == b.metadata["heading_path"]
    assert any(b.start_char < a.end_char for a, b in zip(chunks, chunks[1:])), "no overlap at all"
    plain = run(text, target=40, overlap=0)
    assert all(b.start_char == a.end_char for a, b in zip(plain, plain[1:]))


def test_overlap_never_starts_inside_code() -> None:
    fence = "```\n" + "".join(f"c{i}\n" for i in range(8)) + "```\n"
    text = f"# S\n\n{fence}\n" + "\n\n".join(f"Words number {i} go here." for i in range(20)) + "\n"
    chunks = run(text, target=30, overlap=20)
    start = text.index(fence)
    assert not [c for c in chunks if start < c.start_char < start + len(fence)]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("final", [True, False])
def test_offsets_are_exact_for_any_line_ending(eol: str, final: bool) -> None:
    text = eol.join(["Pre", "", "# A", "", "text", "", "## B", "", "```", "x", "```", "", "| a |", "|---|", "| 1 |"])
    text += eol if final else ""
    chunks = run(text)
    assert [c.start_char for c in chunks] == [0, text.index("# A"), text.index("## B")]
    assert chunks[-1].metadata == {"heading_path": ["A", "B"], "heading_levels": [1, 2], "section_anchor": "h2:a.b"}


@pytest.mark.parametrize("text", [
    "\x00# nul\n# H\n", "a\u2028# not a line\n# H\n", "\x0b\x0c\n# H\x0c\n", ">" * 60 + " deep\n\n# H\n",
    "- " * 200 + "x\n", "[ref]: /url\n\n# H [ref]\n", "   \n\t\n", "#\n\n#\n", "\ufeff# bom\n",
    bytes(range(256)).decode("latin-1")])
def test_any_text_is_chunked_validly(text: str) -> None:
    for target in (1, 3, 50):
        run(text, target=target, overlap=0)
        run(text, target=target + 1, overlap=target)


def test_empty_text_and_bad_spec() -> None:
    assert MarkdownChunker().chunk("", ChunkSpec(10, 2, 10), SimpleTokenizer()) == []
    with pytest.raises(ValidationError):
        MarkdownChunker().chunk("# a", ChunkSpec(10, 10, 10), SimpleTokenizer())


def test_registers_itself_through_the_hook() -> None:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(markdown)
    found: list = []
    pm.hook.memtrove_register_chunkers(register=found.append)
    assert [(c.name, c.version) for c in found] == [("markdown", "1")]


# --- Generated documents -------------------------------------------------------------------------

WORD = st.sampled_from(["alpha", "Beta", "gamma", "délta", "東京", "naïve", "x1", "token", "refresh", "😀", "e\u0301"])


@dataclass
class Doc:
    """A generated document with what it is known to hold."""

    text: str = ""
    headings: list[tuple[int, int, list[str]]] = field(default_factory=list)  # (offset, level, heading path)
    atomic: list[tuple[int, str]] = field(default_factory=list)  # (offset, fence or table text)


def words(draw, low: int, high: int) -> str:
    return " ".join(draw(st.lists(WORD, min_size=low, max_size=high)))


@st.composite
def documents(draw) -> Doc:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    doc, stack = Doc(), []
    for kind in draw(st.lists(st.sampled_from(["heading", "para", "para", "fence", "table", "list", "quote"]),
                              min_size=1, max_size=30)):
        lines: list[str]
        if kind == "heading":
            level, title = draw(st.integers(1, 6)), words(draw, 1, 4)
            setext = level <= 2 and draw(st.booleans())
            lines = [title, "=-"[level - 1] * draw(st.integers(1, 5))] if setext else ["#" * level + " " + title]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            doc.headings.append((len(doc.text), level, [t for _, t in stack]))
        elif kind == "para":
            text = words(draw, 1, 120)
            width = draw(st.sampled_from([20, 80, 10_000]))
            lines = [text[i:i + width] for i in range(0, len(text), width)] or [text]
            lines = [line if line.strip() and line[0] != " " else "w" + line for line in lines]
        elif kind == "fence":
            marker = draw(st.sampled_from(["```", "~~~", "````"]))
            body = draw(st.lists(st.sampled_from(["", "# fake heading", "| a | b |", "    indented", "x = 1"]),
                                 max_size=30))
            lines = [marker + draw(st.sampled_from(["", "python"])), *body, marker]
        elif kind == "table":
            rows = draw(st.lists(st.tuples(WORD, WORD), max_size=25))
            lines = ["| h1 | h2 |", "|----|:--:|", *(f"| {a} | {b} |" for a, b in rows)]
        elif kind == "list":
            items = draw(st.lists(st.tuples(st.booleans(), st.integers(1, 12)), min_size=1, max_size=10))
            lines = [("  - " if nested else "- ") + words(draw, n, n) for nested, n in items]
        else:
            lines = ["> " + words(draw, 1, 10), "> # quoted heading", "> " + words(draw, 1, 10)]
        block = eol.join(lines)
        if kind in ("fence", "table"):
            doc.atomic.append((len(doc.text), block))
        doc.text += block + eol * draw(st.integers(2, 3))
    if doc.text and draw(st.booleans()):
        doc.text = doc.text.rstrip("\r\n")
    return doc


SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(doc=documents(), target=st.integers(2, 120), overlap_share=st.floats(0, 0.9))
def test_generated_documents(doc: Doc, target: int, overlap_share: float) -> None:
    check_generated(doc, ChunkSpec(target, int(target * overlap_share), target), SimpleTokenizer(), slack=1)


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW)
@given(doc=documents(), target=st.integers(8, 120), overlap_share=st.floats(0, 0.9))
def test_generated_documents_with_cl100k_tokens(doc: Doc, target: int, overlap_share: float) -> None:
    check_generated(doc, ChunkSpec(target, int(target * overlap_share), target), tiktoken_tokenizer(), slack=3)


def check_generated(doc: Doc, spec: ChunkSpec, tokenizer, slack: int) -> None:
    """Everything the chunker promises, on a document whose headings, fences and tables are known.

    ``slack``: how many more tokens a chunk may count on its own than its share of the whole text's.
    """
    text, target = doc.text, spec.target_tokens
    chunks = MarkdownChunker().chunk(text, spec, tokenizer)
    assert chunk_problem(text, chunks) is None
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    assert MarkdownChunker().chunk(text, spec, tokenizer) == chunks
    starts = tokenizer.token_starts(text)
    atomic_texts = {block for _, block in doc.atomic}
    for offset, block in doc.atomic:
        assert any(c.start_char <= offset and offset + len(block) <= c.end_char for c in chunks), f"cut: {block!r}"
        assert not [c for c in chunks if offset < c.start_char < offset + len(block)], f"starts inside {block!r}"
    section_starts = [offset for offset, _, _ in doc.headings]
    owners: dict[str, int] = {}
    for chunk in chunks:
        assert chunk.token_count == max(1, bisect_left(starts, chunk.end_char) - bisect_left(starts, chunk.start_char))
        kind = chunk.metadata.get("kind")
        if kind is not None:
            assert chunk.content.rstrip("\r\n") in atomic_texts
        elif chunk.token_count > target or tokenizer.count(chunk.content) > target + slack:
            pytest.fail(f"chunk {chunk.index} of {chunk.token_count} tokens is over the target {target}")
        here = bisect_right(section_starts, chunk.start_char)  # the section's number (0: before any heading)
        _, level, expected = doc.headings[here - 1] if here else (0, 0, [])
        assert chunk.metadata["heading_path"] == expected
        levels = chunk.metadata["heading_levels"]  # each enclosing heading's own level, outermost first
        assert len(levels) == len(expected) and levels == sorted(set(levels)) and levels[-1:] == [level][:len(levels)]
        assert not [s for s in section_starts if chunk.start_char < s < chunk.end_char], "spans two sections"
        anchor = chunk.metadata["section_anchor"]
        base = f"h{level}:" + ".".join(slug(t) for t in expected)
        assert anchor == base or re.fullmatch(re.escape(base) + r"-\d+", anchor) and here, anchor
        assert owners.setdefault(anchor, here) == here, "an anchor names two sections"
    assert len(owners) == len(set(owners.values())), "a section has two anchors"
    for a, b in zip(chunks, chunks[1:]):
        if b.start_char < a.end_char:
            assert a.metadata["section_anchor"] == b.metadata["section_anchor"], "overlap across sections"
    assert set(section_starts) <= {c.start_char for c in chunks}, "a section does not start at its heading"


# --- Real documents ------------------------------------------------------------------------------

@functools.cache
def _parsers() -> tuple[MarkdownIt, MarkdownIt]:
    return MarkdownIt("commonmark").enable("table").disable("inline"), MarkdownIt("commonmark").enable("table")


def markdown_headings(text: str) -> list[tuple[int, list[str]]]:
    """(section start, heading path) of each top-level heading markdown-it finds, independently."""
    blocks, inline = _parsers()
    line_starts = [0, *(m.end() for m in re.finditer(r"\r\n?|\n", text))]
    tokens = blocks.parse(text)
    found, stack = [], []
    first = next((i for i, t in enumerate(tokens) if t.map), None)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            children = inline.parseInline(tokens[i + 1].content)[0].children or []
            title = " ".join("".join(" " if c.type in ("softbreak", "hardbreak") else c.content for c in children
                                     if c.type in ("text", "code_inline", "softbreak", "hardbreak")).split())
            level = int(token.tag[1:])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            found.append((0 if i == first else line_starts[token.map[0]], [t for _, t in stack]))
    return found


def check_real(text: str, spec: ChunkSpec, tokenizer) -> list[Chunk]:
    chunks = MarkdownChunker().chunk(text, spec, tokenizer)
    assert chunk_problem(text, chunks) is None
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    headings = markdown_headings(text)
    starts = [offset for offset, _ in headings]
    for chunk in chunks:
        here = bisect_right(starts, chunk.start_char)
        assert chunk.metadata["heading_path"] == (headings[here - 1][1] if here else [])
    by_start = {c.start_char: c.metadata["heading_path"] for c in chunks}
    for offset, path in headings:
        assert by_start.get(offset) == path, f"no chunk starts the section {path} at {offset}"
    return chunks


def repository_markdown() -> list[Path]:
    skip = {".venv", ".conformance", ".git", "node_modules"}
    return sorted(p for p in REPO.rglob("*.md") if not skip & set(p.relative_to(REPO).parts))


@pytest.mark.parametrize("path", repository_markdown(), ids=lambda p: str(p.relative_to(REPO)))
@pytest.mark.parametrize("target", [64, 600])
def test_this_repository_markdown(path: Path, target: int) -> None:
    text = path.read_text(encoding="utf-8")
    for tokenizer in (SimpleTokenizer(), tiktoken_tokenizer()):
        check_real(text, ChunkSpec(target, target // 10, target), tokenizer)


@pytest.mark.skipif(not PYTHON_DOCS, reason="Python's documentation sources are absent (apt-get install python3-doc)")
def test_python_documentation_sources() -> None:
    files = sorted({f.resolve() for root in PYTHON_DOCS for f in root.rglob("*.rst.txt")})
    assert files, f"no sources under {PYTHON_DOCS}"
    spec, sections = ChunkSpec(300, 50, 300), 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        chunks = check_real(text, spec, tiktoken_tokenizer())
        sections += len(sections_of(chunks))
        for chunk in chunks:
            assert chunk.token_count <= spec.target_tokens or chunk.metadata.get("kind") in ("code", "table"), path
    assert sections > len(files)
