"""The reStructuredText chunker: titles by their adornment, literal blocks and tables kept whole, linear."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.chunk_checks import chunk_problem
from domain.model import Chunk, ChunkSpec
from domain.artifacts.usecases import reconstruct
from plugins.chunkers.rst import RstChunker, rst_blocks
from plugins.testing import ChunkerContract, SimpleTokenizer

DOCS = Path("/usr/share/doc/python3.11/html/_sources/library")
SAMPLE = """\
=================
 The big overline
=================

Intro paragraph.

Usage
=====

Plain text with ``literal`` and a :func:`role <mod.role>`. An example::

    code line one

    code line two, same block

Back to prose.

Details
-------

.. code-block:: python

   def f():
       return 1

.. function:: dump(obj)

   Serialize *obj*; a directive body is prose.

+------+------+
| a    | b    |
+======+======+
| 1    | 2    |
+------+------+

Second chapter
==============

Tail text with a line

-----

after a transition.
"""
SAMPLES = [SAMPLE, "no titles at all\n\njust text", "Title\n=====\n", "x\r\n\r\nTitle\r\n~~~~~\r\n\r\nbody\r\n",
           "東京 😀\n=======\n\n" + "段落。" * 300 + "\n"]


class TestRstChunker(ChunkerContract):
    @pytest.fixture
    def chunker(self):
        return RstChunker()

    @pytest.fixture
    def samples(self):
        return SAMPLES


def run(text: str, target: int = 1000, overlap: int = 0) -> list[Chunk]:
    chunks = RstChunker().chunk(text, ChunkSpec(target, overlap, target), SimpleTokenizer())
    assert chunk_problem(text, chunks) is None
    assert reconstruct(chunks) == text  # type: ignore[arg-type]
    return chunks


def test_titles_levels_follow_first_appearance_and_roles_read_as_text() -> None:
    heads = [(b.level, b.title) for b in rst_blocks(SAMPLE) if b.kind == "heading"]
    assert heads == [(1, "The big overline"), (2, "Usage"), (3, "Details"), (2, "Second chapter")]
    paths = {tuple(c.metadata["heading_path"]) for c in run(SAMPLE, target=30)}
    assert ("The big overline", "Usage", "Details") in paths and ("The big overline", "Second chapter") in paths


def test_literal_blocks_code_directives_and_tables_are_never_cut() -> None:
    kinds = [(b.kind, SAMPLE[b.start:b.end].strip().splitlines()[0]) for b in rst_blocks(SAMPLE)]
    assert ("code", "code line one") in kinds  # both paragraphs of the literal block are one block
    assert not any(first == "code line two, same block" for _, first in kinds)
    assert ("code", "def f():") in kinds
    assert ("text", ".. function:: dump(obj)") in kinds and ("text", "Serialize *obj*; a directive body is prose.") in kinds
    assert ("table", "+------+------+") in kinds
    for chunk in run(SAMPLE, target=8):
        if "code line one" in chunk.content:
            assert "code line two, same block" in chunk.content and chunk.metadata.get("kind") == "code"


def test_a_transition_is_no_title() -> None:
    assert "Tail text with a line" not in [b.title for b in rst_blocks(SAMPLE)]
    assert all(b.title != "" or b.kind != "heading" for b in rst_blocks(SAMPLE))


@pytest.mark.skipif(not DOCS.is_dir(), reason="Python's documentation sources are absent (apt-get install python3-doc)")
def test_python_library_documentation() -> None:
    from adapters.text.tokenizers import TiktokenTokenizer

    tokenizer, spec, titled = TiktokenTokenizer(), ChunkSpec(200, 32, 200), 0
    files = sorted(DOCS.glob("*.rst.txt"))
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        chunks = RstChunker().chunk(text, spec, tokenizer)
        assert chunk_problem(text, chunks) is None, path
        assert all(c.token_count <= spec.target_tokens or c.metadata.get("kind") in ("code", "table")
                   for c in chunks), path
        titled += all(c.metadata["heading_path"] for c in chunks[1:])
    assert titled > len(files) * 0.9  # past the first chunk, every chunk knows its section


def test_a_note_is_prose_even_though_its_line_ends_in_two_colons_and_leading_blanks_are_no_block() -> None:
    text = "\n\nTitle\n=====\n\n.. note::\n\n   Counters were designed for positive counts.\n\nAfter.\n"
    blocks = rst_blocks(text)
    assert blocks[0].start == 0 and blocks[0].kind == "heading"
    assert [b.kind for b in blocks] == ["heading", "text", "text", "text"]
    assert all(c.metadata.get("kind") != "code" for c in run(text, target=5))
