"""Spec 001's views of session memories: natural iteration order, and the section fields of chunks cut
by the Markdown chunker (header_path, level, chunk_type, MEDIUM's section key)."""

from __future__ import annotations

import pytest

from domain.errors import ValidationError
from domain.model import ArtifactChunk, ChunkSpec
from domain.sessions.scope import (
    chunk_type,
    first_heading,
    header_path,
    heading_line,
    heading_of,
    iteration_order,
    scope_filter,
    section_key,
    section_level,
)
from plugins.chunkers.markdown import MarkdownChunker
from plugins.testing import SimpleTokenizer

# --- iteration_order ---------------------------------------------------------------------------


def test_iterations_sort_naturally() -> None:
    assert sorted(["v10", "v2", "v1", "v2a", "v9"], key=iteration_order) == ["v1", "v2", "v2a", "v9", "v10"]


@pytest.mark.parametrize(("lower", "higher"), [
    ("v2", "v10"), ("v9", "v10"), ("v99", "v100"), ("1.9", "1.10"), ("1.10", "2.0"), ("iter-2", "iter-10"),
    ("v2", "v2a"), ("v2a", "v2b"), ("v2b", "v3"), ("v9", "V10"), ("2", "10"), ("v1", "w1"),
    ("v123456789", "v1234567890"),
])
def test_iteration_order_compares_numbers_as_numbers(lower: str, higher: str) -> None:
    assert iteration_order(lower) < iteration_order(higher)


def test_iteration_order_ignores_case_and_keeps_none() -> None:
    assert iteration_order("V2") == iteration_order("v2")
    assert iteration_order(None) is None
    assert isinstance(iteration_order("v1"), str)


# --- chunk fields from real Markdown chunks ------------------------------------------------------

DOC = """Preamble before any heading.

# Title

Intro text.

## A

Alpha text about the first part.

### A1

Deep text under the subsection.

```python
def f():
    return 1
```

More deep text after the code block.

## B

Beta text.

| a | b |
|---|---|
| 1 | 2 |

#### Skipped levels

Text under a level four heading directly below an H2, long enough to be cut.
"""


@pytest.fixture(scope="module")
def chunks() -> list[ArtifactChunk]:
    cut = MarkdownChunker().chunk(DOC, ChunkSpec(12, 0, 12), SimpleTokenizer())
    assert "".join(c.content for c in cut) == DOC
    return [ArtifactChunk(f"art_x::chunk::{c.index:03d}::{c.content_hash[:8]}", "art_x", c.index, c.start_char,
                          c.end_char, c.content, c.token_count, c.content_hash, c.metadata) for c in cut]


def starting(chunks: list[ArtifactChunk], text: str) -> ArtifactChunk:
    found = [c for c in chunks if c.content.startswith(text)]
    assert len(found) == 1, (text, [c.content[:30] for c in chunks])
    return found[0]


def test_header_path_of_a_subsection(chunks) -> None:
    a1 = starting(chunks, "### A1")
    assert header_path(a1) == "# Title > ## A > ### A1"
    assert section_level(a1) == 3 and chunk_type(a1) == "section" and section_key(a1) == ("Title", "A")


def test_header_paths_of_each_level(chunks) -> None:
    assert header_path(starting(chunks, "# Title")) == "# Title"
    assert header_path(starting(chunks, "## A")) == "# Title > ## A"
    assert header_path(starting(chunks, "## B")) == "# Title > ## B"


def test_levels(chunks) -> None:
    assert section_level(starting(chunks, "Preamble")) == 0
    assert section_level(starting(chunks, "# Title")) == 1
    assert section_level(starting(chunks, "## A")) == 2
    assert section_level(starting(chunks, "## B")) == 2
    assert section_level(starting(chunks, "#### Skipped")) == 4


def test_text_before_any_heading(chunks) -> None:
    preamble = starting(chunks, "Preamble")
    assert header_path(preamble) == "" and section_level(preamble) == 0
    assert chunk_type(preamble) == "text" and section_key(preamble) == ()


def test_a_fenced_code_block_alone(chunks) -> None:
    code = starting(chunks, "```python")
    assert chunk_type(code) == "code_block"
    assert header_path(code) == "# Title > ## A > ### A1" and section_level(code) == 3
    assert section_key(code) == ("Title", "A")


def test_a_table_alone(chunks) -> None:
    table = starting(chunks, "| a | b |")
    assert chunk_type(table) == "table"
    assert header_path(table) == "# Title > ## B" and section_level(table) == 2 and section_key(table) == ("Title", "B")


def test_text_continuing_a_section(chunks) -> None:
    more = starting(chunks, "More deep text")
    assert chunk_type(more) == "text"  # no heading opens it
    assert header_path(more) == "# Title > ## A > ### A1" and section_level(more) == 3


def test_section_keys_group_by_h1_and_h2(chunks) -> None:
    keys = {section_key(c) for c in chunks}
    assert keys == {(), ("Title",), ("Title", "A"), ("Title", "B")}
    assert section_key(starting(chunks, "#### Skipped")) == ("Title", "B")


def test_a_section_heading_keeps_its_own_level_in_the_path(chunks) -> None:
    """The last step of the path is the section's own heading, at its level (the ``level`` field beside it)."""
    deep = starting(chunks, "#### Skipped")
    path = header_path(deep)
    assert path == "# Title > ## B > #### Skipped levels", path
    assert path.split(" > ")[-1].split(" ")[0] == "#" * section_level(deep)


def test_every_enclosing_heading_keeps_its_own_level() -> None:
    """A document that starts at H2: the path is "## Overview > ### Detail", no level made up."""
    text = "## Overview\n\nSome text.\n\n### Detail\n\nDeeper text.\n"
    cut = MarkdownChunker().chunk(text, ChunkSpec(6, 0, 6), SimpleTokenizer())
    detail = [ArtifactChunk(f"art_z::chunk::{c.index:03d}::0", "art_z", c.index, c.start_char, c.end_char, c.content,
                            c.token_count, c.content_hash, c.metadata) for c in cut if "### Detail" in c.content]
    assert len(detail) == 1 and header_path(detail[0]) == "## Overview > ### Detail"
    assert heading_line(detail[0], 1) == "## Overview"


def test_chunks_cut_before_levels_were_kept_take_their_section_level() -> None:
    """Stored chunks without ``heading_levels``: the section's own level, enclosing headings one above."""
    old = ArtifactChunk("art_o::chunk::000::0", "art_o", 0, 0, 4, "text", 1, "0" * 64,
                        {"heading_path": ["Overview", "Detail"], "section_anchor": "h3:overview.detail"})
    assert header_path(old) == "# Overview > ### Detail"
    assert heading_line(old, 1) == "# Overview"


def test_a_document_without_a_title_keeps_its_heading_level() -> None:
    text = "## Only a second level heading\n\nSome text.\n"
    [cut] = MarkdownChunker().chunk(text, ChunkSpec(100, 0, 100), SimpleTokenizer())
    only = ArtifactChunk("art_y::chunk::000::0", "art_y", 0, 0, len(text), text, cut.token_count, cut.content_hash,
                         cut.metadata)
    assert section_level(only) == 2
    assert header_path(only) == "## Only a second level heading"


@pytest.mark.parametrize(("metadata", "content", "expected"), [
    ({"kind": "code"}, "```\nx\n```\n", "code_block"),
    ({"kind": "table"}, "| a |\n|---|\n", "table"),
    ({}, "## Heading\n\ntext", "section"),
    ({}, "   # Indented heading\n", "section"),
    ({}, "#hashtag is not a heading", "text"),
    ({}, "plain text", "text"),
])
def test_chunk_type_from_metadata_and_content(metadata: dict, content: str, expected: str) -> None:
    chunk = ArtifactChunk("art_z::chunk::000::0", "art_z", 0, 0, len(content), content, 1, "0" * 64, metadata)
    assert chunk_type(chunk) == expected


def test_fields_without_chunker_metadata() -> None:
    bare = ArtifactChunk("art_z::chunk::000::0", "art_z", 0, 0, 4, "text", 1, "0" * 64)
    assert header_path(bare) == "" and section_level(bare) == 0 and section_key(bare) == ()


# --- scope filters and titles --------------------------------------------------------------------


def test_scope_filter_keeps_the_given_fields() -> None:
    assert scope_filter("report", session_id="s1", agent_id=None) == {"memory_type": "report", "session_id": "s1"}
    assert scope_filter(None) == {}
    assert scope_filter(None, session_iter="v2", task_code="T-1", category="c") == {
        "session_iter": "v2", "task_code": "T-1", "category": "c"}
    assert scope_filter(None, unknown="x") == {}


@pytest.mark.parametrize("value", ["", "   ", 5, "x" * 201])
def test_scope_filter_refuses_bad_values(value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        scope_filter(None, session_id=value)
    assert refused.value.field == "session_id"


def test_first_heading() -> None:
    assert first_heading(DOC) == "Title"
    assert first_heading("no heading here") is None
    assert first_heading("text\n\n## Closed heading ##\n") == "Closed heading"


def test_the_first_heading_of_a_memory_kept_whole_keeps_its_level() -> None:
    assert heading_of("Intro line.\n\n## Overview ##\n\nText.\n") == (2, "Overview")
    assert heading_of("#hashtag is not a heading\n") is None and first_heading("no heading") is None
    assert first_heading("### Deep title\n") == "Deep title"
