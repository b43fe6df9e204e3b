"""Choosing a chunker, storing its choice and metadata, and surviving a broken one (on the fakes)."""

from __future__ import annotations

import pytest

from domain.chunker_choice import choose
from domain.chunking import content_hash
from domain.errors import ValidationError
from domain.model import Chunk, ChunkSpec
from domain.artifacts.input import IngestRequest
from domain.artifacts.usecases import GetArtifact
from domain.artifacts.ingest import IngestArtifact
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, synced

ALL = {"token-window", "markdown", "rst", "email", "chat", "code"}
RST = "Title\n=====\n\nIntro.\n\nPart\n----\n\nMore text.\n"
LONG = "\n\n".join(f"Paragraph {i} talks about topic {i} at some length so that it needs chunks." for i in range(40))


@pytest.mark.parametrize(("kind", "content", "names", "expected"), [
    ("email", "hi", (None, None, None), "email"),
    ("chat", "a: b", (None, None, None), "chat"),
    ("transcript", "a: b", (None, None, None), "chat"),
    ("doc", "plain", ("notes.md", None, None), "markdown"),
    ("doc", "plain", (None, None, "https://git.example/x/blob/main/app.py?raw=1"), "code"),
    ("doc", "# Title\n\ntext\n\n## Part\n\nmore", (None, None, None), "markdown"),
    ("note", "import os\n\ndef main():\n    pass\n\nclass A:\n    pass\n", (None, None, None), "code"),
    ("doc", "Just some prose about a meeting.", (None, None, None), "token-window"),
    ("doc", "plain", ("library/json.rst.txt", None, None), "rst"),
    ("doc", "plain", (None, "docs/index.rst", None), "rst"),
    ("doc", RST, (None, None, None), "rst"),
    ("doc", "A line\n\n------\n\nA transition is no title.", (None, None, None), "token-window"),
])
def test_chosen_by_type_name_and_content(kind, content, names, expected) -> None:
    assert choose(kind, content, names, ALL) == expected
    assert choose(kind, content, names, {"token-window"}) == "token-window"  # not installed: the fallback


TREE = {f"code-{language}" for language in ("javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp")}


@pytest.mark.parametrize(("names", "with_tree", "without_tree"), [
    (("main.go", None, None), "code-go", "code"),
    ((None, "src/App.TSX", None), "code-tsx", "code"),
    ((None, None, "https://git.example/x/blob/main/lib.rs?raw=1#L3"), "code-rust", "code"),
    (("index.mjs", None, None), "code-javascript", "code"),
    (("types.d.ts", None, None), "code-typescript", "code"),
    (("geo.h", None, None), "code-c", "code"),
    (("geo.hpp", None, None), "code-cpp", "code"),
    (("Main.java", None, None), "code-java", "code"),
    (("app.py", None, None), "code", "code"),  # Python: the ast chunker
    (("stubs.pyi", None, None), "code", "code"),
    (("Build.kt", None, None), "code", "code"),  # a code suffix tree-sitter does not read here
    (("README.md", None, "https://x/main.go"), "markdown", "markdown"),
])
def test_a_tree_sitter_language_gets_its_own_chunker_when_available(names, with_tree, without_tree) -> None:
    assert choose("doc", "plain", names, ALL | TREE) == with_tree
    assert choose("doc", "plain", names, ALL) == without_tree
    assert choose("doc", "plain", names, {"token-window"}) == "token-window"


class Paragraphs:
    """Splits at blank lines, tagging each chunk; valid."""

    name, version = "paragraphs", "1"

    def chunk(self, text, spec, tokenizer):
        chunks, start = [], 0
        while start < len(text):
            end = text.find("\n\n", start)
            end = len(text) if end == -1 else end + 2
            piece = text[start:end]
            chunks.append(Chunk(len(chunks), start, end, piece, max(1, tokenizer.count(piece)), content_hash(piece),
                                {"paragraph": len(chunks), "indexed": len(chunks) % 2 == 0}))
            start = end
        return chunks


class Raises:
    name, version = "raises", "1"

    def chunk(self, text, spec, tokenizer):
        raise RuntimeError("boom")


class Gappy(Paragraphs):
    name = "gappy"

    def chunk(self, text, spec, tokenizer):
        return super().chunk(text, spec, tokenizer)[::2]  # leaves holes


def ingest(w, chunkers, **kw):
    return IngestArtifact(w.embedder, w.artifacts, w.artifacts, chunkers, w.tokenizer, ChunkSpec(30, 5, 30),
                          w.split, **kw)


def test_the_chosen_chunker_and_its_version_are_stored_and_rechunking_replaces(aworld) -> None:
    chunkers = catalog(TokenWindowChunker(), Paragraphs())
    first = ingest(aworld, chunkers)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert (first.artifact.chunker, first.artifact.chunker_version) == ("token-window", "1")
    again = ingest(aworld, chunkers)(IngestRequest("doc", "drive", LONG, source_id="d1", chunker="paragraphs"))
    assert again.status == "replaced" and again.artifact.chunker == "paragraphs"
    assert again.artifact.version != first.artifact.version and again.artifact.content_hash == first.artifact.content_hash
    same = ingest(aworld, chunkers)(IngestRequest("doc", "drive", LONG, source_id="d1", chunker="paragraphs"))
    assert same.status == "unchanged"
    by_config = ingest(aworld, chunkers, default_chunker="paragraphs")(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert by_config.status == "unchanged"
    view = GetArtifact(aworld.artifacts)(again.artifact.id, include_content=True, include_chunks=True)
    assert view.content == LONG
    assert [c.metadata["paragraph"] for c in view.chunks] == list(range(len(view.chunks)))


def test_chunks_marked_not_indexed_are_kept_but_neither_embedded_nor_searchable(aworld) -> None:
    result = ingest(aworld, catalog(TokenWindowChunker(), Paragraphs()))(
        IngestRequest("doc", "drive", LONG, source_id="d2", chunker="paragraphs"))
    indexed = [c for c in result.chunks if c.metadata["indexed"]]
    assert 0 < len(indexed) < len(result.chunks)
    assert set(synced(aworld).vectors.vectors_of("chunk", [c.id for c in result.chunks])) == {c.id for c in indexed}
    hidden = next(c for c in result.chunks if not c.metadata["indexed"])
    found = aworld.store.lexical_search("chunk", ["paragraph", hidden.content.split()[1]], 100)
    assert hidden.id not in {m.record_id for m in found}


@pytest.mark.parametrize("bad", [Raises(), Gappy()], ids=["raises", "invalid-chunks"])
def test_a_broken_chunker_is_reported_once_skipped_and_never_corrupts_an_ingest(aworld, bad) -> None:
    chunkers = catalog(TokenWindowChunker(), bad)
    result = ingest(aworld, chunkers)(IngestRequest("doc", "drive", LONG, source_id="d3", chunker=bad.name))
    assert result.status == "ingested" and result.artifact.chunker == "token-window"
    assert GetArtifact(aworld.artifacts)(result.artifact.id, include_content=True).content == LONG
    assert bad.name in chunkers.broken and bad.name not in chunkers.names()
    with pytest.raises(ValidationError) as refused:  # from now on it is not offered
        ingest(aworld, chunkers)(IngestRequest("doc", "drive", LONG + "!", source_id="d4", chunker=bad.name))
    assert refused.value.field == "chunker"


def test_an_unknown_chunker_is_refused_naming_the_field_and_the_choices(aworld) -> None:
    with pytest.raises(ValidationError) as refused:
        ingest(aworld, catalog(TokenWindowChunker()))(IngestRequest("doc", "drive", LONG, chunker="fancy"))
    assert refused.value.field == "chunker" and "auto, token-window" in refused.value.message
    assert aworld.artifacts.committed_versions() == {} and aworld.artifacts.pending_versions() == []
