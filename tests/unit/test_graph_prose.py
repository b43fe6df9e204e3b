"""What a graph build reads of a document: the prose the Markdown and reST chunkers find (code, tables,
directives, headings and markup blanked, the text's length kept), each part of the text once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from domain.graph.prose import ProseReader, artifact_passages
from domain.model import ArtifactChunk
from plugins.chunkers.markdown import MarkdownChunker
from plugins.chunkers.rst import RstChunker
from plugins.chunkers.token_window import TokenWindowChunker

MARKDOWN = """# Install

Priya Raman maintains the importer; see [the guide](https://example.org/guide) and `pip install x`.

```python
class Color(Enum):
    RED = 1  # prints <enum 'Color'>
```

| Name | Description |
|------|-------------|
| Perm | = Perm      |

<div class='badge'>Color'></div>

- **Tom Baker** reviews each release.
"""

RST = """Enum HOWTO
==========

.. currentmodule:: enum

.. note:: Case of Enum Members

   Members are named in capitals by convention.

An :class:`Enum` is a set of names, written ``Color.RED`` in code.  For example::

    >>> Color(1)
    <Color.RED: 1>

>>> print(Color.RED)
Color.RED

:param value: the member's value, as Barry Warsaw wrote it.

+------+-------+
| Perm | Value |
+------+-------+
"""


def test_markdown_prose_is_its_paragraphs_without_markup() -> None:
    prose = MarkdownChunker().prose(MARKDOWN)
    assert len(prose) == len(MARKDOWN) and prose.count("\n") == MARKDOWN.count("\n")
    words = prose.split()
    assert "Priya" in words and "guide" in words and "Tom" in words and "reviews" in words
    for gone in ("Install", "Color(Enum):", "RED", "Perm", "Description", "badge", "https://example.org/guide",
                 "pip", "`pip", "**Tom", "-"):
        assert gone not in words, gone


def test_rst_prose_drops_directives_literals_doctests_fields_and_tables() -> None:
    prose = RstChunker().prose(RST)
    assert len(prose) == len(RST)
    words = prose.split()
    assert {"Members", "named", "set", "names,", "example:", "Barry", "Warsaw"} <= set(words)
    for gone in ("Enum", "HOWTO", "currentmodule::", "note::", "Case", ":class:`Enum`", "``Color.RED``", "Color(1)",
                 "<Color.RED:", ">>>", "Color.RED", ":param", "Perm", "::"):
        assert gone not in words, gone


def chunks_of(text: str, spans: list[tuple[int, int]], meta: dict[int, dict] | None = None) -> list[ArtifactChunk]:
    return [ArtifactChunk(f"a::{i}", "a", i, s, e, text[s:e], 1, "", (meta or {}).get(i, {}))
            for i, (s, e) in enumerate(spans)]


DOC = SimpleNamespace(id="a", ts="2024-01-01T00:00:00Z", content=None)


def test_each_part_of_a_document_is_read_once_and_code_chunks_not_at_all() -> None:
    text = "Alice wrote it. Bob read it. Carol kept it. Dave lost it."
    chunks = chunks_of(text, [(0, 28), (16, 43), (29, 57)], {2: {"kind": "code"}})
    passages = artifact_passages(DOC, chunks, None)  # type: ignore[arg-type]
    assert [(p.part, p.text) for p in passages] == [(0, "Alice wrote it. Bob read it."), (1, " Carol kept it.")]
    assert artifact_passages(DOC, chunks_of(text, [(0, 57)], {0: {"language": "python"}}), None) == []  # type: ignore[arg-type]


def test_a_chunk_is_read_in_its_documents_context() -> None:
    """The literal block after "Example::" is code though its chunk starts after the paragraph."""
    text = "Run it like this::\n\n    Alice = Bob()\n\nCarol answers.\n"
    cut = text.index("    Alice")
    passages = artifact_passages(DOC, chunks_of(text, [(0, cut), (cut, len(text))]), RstChunker())  # type: ignore[arg-type]
    assert "Alice" not in " ".join(p.text for p in passages) and "Carol answers." in passages[-1].text
    assert isinstance(RstChunker(), ProseReader) and not isinstance(TokenWindowChunker(), ProseReader)


def test_a_reader_that_changes_the_length_is_refused() -> None:
    class Broken:
        def prose(self, text: str) -> str:
            return text.strip()

    with pytest.raises(ValueError, match="length"):
        artifact_passages(DOC, chunks_of(" x ", [(0, 3)]), Broken())  # type: ignore[arg-type]
