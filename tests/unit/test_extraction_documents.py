"""The offline extractor on documentation, as build_graph reads it (issue 42): chunked by the Markdown or
reST chunker, prose only (domain/graph/prose.py), names kept only when they read as names and types
only when the sentence agrees. Python's own documentation (python3-doc) when installed, and a
README-like Markdown file written here."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from adapters.memory.basics import WordTokenizer
from domain.graph.extraction import Extracted, Passage
from domain.graph.prose import artifact_passages
from domain.model import ArtifactChunk, ChunkSpec
from plugins.chunkers.markdown import MarkdownChunker
from plugins.chunkers.rst import RstChunker
from plugins.extractors.spacy_rules import SpacyExtractor

SHARED = SpacyExtractor()
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
# The pages the issue's store held ("= Perm", "Color'>", "GiB", "Before we conclude, ...") and more.
PAGES = ("howto/argparse.rst.txt", "howto/enum.rst.txt", "library/enum.rst.txt", "library/zipfile.rst.txt",
         "library/json.rst.txt", "library/pathlib.rst.txt", "tutorial/classes.rst.txt", "tutorial/errors.rst.txt",
         "howto/logging.rst.txt", "library/dataclasses.rst.txt")
# Markup and code in a name, judged apart from the extractor's own rule: punctuation a name never holds,
# a dotted identifier, a quote left open, a digit-letter identifier.
MARKUP = re.compile(r"[=|<>{}\[\]`*#\\/_~^@$%&+;:\"()]|\.[a-z_]|'(?!s\b)|\b\w*\d\w*[A-Za-z]\w*\b|^\W|\W$")

README = """# memtrove-importer

[![build](https://img.shields.io/badge/build-passing-green.svg)](https://ci.example.org)

Priya Raman maintains the importer at the Acme Foundation in Berlin. She moved it from Sweden in 2023.

## Quick start

```bash
pip install memtrove-importer
export IMPORTER_TOKEN=abc  # = Perm
```

| Option | Description |
|--------|-------------|
| `--dry-run` | Print what would change |
| `--to` | Color'> target |

<details><summary>Color'></summary>

Internal notes.

</details>

Before we conclude, you probably want to read the changelog. We decided to keep the CLI small.

The `Importer.run()` method returns a `Report`; see [the docs](https://docs.example.org/importer).
"""


def read(path_or_text: str | Path, chunker: MarkdownChunker) -> list[Passage]:
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    cut = chunker.chunk(text, ChunkSpec(120, 20, 2000), WordTokenizer())
    chunks = [ArtifactChunk(f"d::{c.index}", "d", c.index, c.start_char, c.end_char, c.content, c.token_count, "",
                            c.metadata) for c in cut]
    return artifact_passages(SimpleNamespace(id="d", ts=None, content=None), chunks, chunker)  # type: ignore[arg-type]


def extracted(passages: list[Passage]) -> list[Extracted]:
    return SHARED.extract(passages)


def names(found: list[Extracted]) -> dict[str, str]:
    return {m.name: m.entity_type for one in found for m in one.entities}


def test_a_readme_gives_its_people_and_places_and_nothing_of_its_markup() -> None:
    found = extracted(read(README, MarkdownChunker()))
    kept = names(found)
    assert kept.get("Priya Raman") == "person" and kept.get("Acme Foundation") == "organization"
    assert kept.get("Berlin") == "place" and kept.get("Sweden") == "place"
    assert [n for n in kept if MARKUP.search(n)] == []
    assert not {"Perm", "Color", "Description", "Option", "Importer", "Report"} & set(kept), kept
    events = [e.summary for one in found for e in one.events]
    # "She" is Priya Raman; "Before we conclude, you probably want ..." is a clause, no decision
    assert events == ["She moved it from Sweden in 2023.", "We decided to keep the CLI small."]


@pytest.mark.skipif(not PYTHON_DOCS.exists(), reason="python3-doc is not installed")
def test_pythons_documentation_gives_no_markup_and_no_decisions() -> None:
    passages = [p for page in PAGES for p in read(PYTHON_DOCS / page, RstChunker())]
    found = extracted(passages)
    kept = names(found)
    assert kept and [n for n in kept if MARKUP.search(n)] == []
    for junk in ("= Perm", "Perm", "Color'>", "Color", "GiB", "Enum", "Logging", "Path", "Size"):
        assert junk not in kept or kept[junk] != "person", (junk, kept.get(junk))
    assert kept.get("GiB") is None  # "4 GiB": a unit
    assert [e.summary for one in found for e in one.events if e.kind == "decision"] == []
    people = sorted(n for n, t in kept.items() if t == "person")
    assert len(people) <= 5, people  # a few authors (Vinay Sajip, Phil Katz), not headings and classes
    acting = [e for one in found for e in one.events if not all(kept.get(w) in ("person", "organization")
                                                                 for w in e.who)]
    assert acting == []  # "a closed ZipFile will raise ...": a class does nothing of the reader's


def test_a_name_that_does_something_is_no_place_and_a_unit_is_no_person() -> None:
    found = extracted([Passage("artifact", "d", "Marta keeps bees on the roof. The archive is larger than 4 GiB. "
                                                "Marta moved to Lisbon last spring.")])
    kept = names(found)
    assert kept.get("Marta") != "place" and "GiB" not in kept and kept.get("Lisbon") == "place"


def test_a_condition_tells_no_event_and_a_clause_that_happened_does() -> None:
    said = SHARED.extract([Passage("turn", "t", "If we decide to move, I'll tell you. I'm so glad that I finally "
                                                "graduated!", speaker="Caroline")])[0]
    assert [(e.kind, e.summary) for e in said.events if e.kind != "action"] == [
        ("milestone", "I'm so glad that I finally graduated!")]
