"""The second look at a found document's chunks (domain/search/second_look.py): the passage that answers,
assembled from adjacent chunks up to ~1,500 characters, exact offsets, no overlaps; its use in the searches."""

from __future__ import annotations

from dataclasses import replace

import pytest

from config.settings import Settings
from domain.artifacts.input import IngestRequest
from domain.artifacts.ingest import IngestArtifact
from domain.errors import ConfigurationError
from domain.model import ArtifactChunk, ChunkSpec
from domain.search.retrieval import PROFILES, Weights
from domain.search.second_look import Look, assembled, passages
from domain.search.usecases import ArtifactSearch, HybridSearch, SearchRequest
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, searcher, synced

FILLER = "Plain prose about other matters fills this part of the text. "


def cut(pieces: list[str], overlap: int = 0, headings: list[list[str]] | None = None) -> tuple[str, list[ArtifactChunk]]:
    """A text made of ``pieces`` and its chunks, one a piece, each starting ``overlap`` characters back."""
    text = "".join(pieces)
    chunks, start = [], 0
    for i, piece in enumerate(pieces):
        begin = max(0, start - overlap) if i else 0
        end = start + len(piece)
        meta = {"heading_path": headings[i]} if headings else {}
        chunks.append(ArtifactChunk(f"a::chunk::{i:03d}::x", "a", i, begin, end, text[begin:end], 10, "h", meta))
        start = end
    return text, chunks


def test_assembled_text_is_the_artifact_text_between_the_offsets() -> None:
    for overlap in (0, 25):
        text, chunks = cut([FILLER * 2, "the frobnicator restarts " * 3, FILLER * 2, FILLER], overlap)
        for first in range(len(chunks)):
            for last in range(first, len(chunks)):
                inside = chunks[first:last + 1]
                assert assembled(inside) == text[inside[0].start_char:inside[-1].end_char]


def test_an_answer_across_two_adjacent_chunks_is_one_passage_with_exact_offsets() -> None:
    text, chunks = cut([FILLER * 4, FILLER * 3 + "To rotate the signing key, first stop the ledger daemon",
                        " and then purge its replay cache before restarting. " + FILLER * 2, FILLER * 5], overlap=20)
    words = ["rotate", "signing", "key", "ledger", "daemon", "purge", "replay", "cache"]
    [span] = passages(chunks, words, {}, {}, 1)
    assert (span.first, span.last) == (1, 2)
    assert (span.start, span.end) == (chunks[1].start_char, chunks[2].end_char)
    assert "stop the ledger daemon and then purge its replay cache" in text[span.start:span.end]
    assert assembled(chunks[1:3]) == text[span.start:span.end]


def test_a_chunk_that_holds_the_words_alone_stays_alone() -> None:
    _, chunks = cut([FILLER * 4, "The frobnicator restarts when its quota is spent. " + FILLER, FILLER * 4])
    [span] = passages(chunks, ["frobnicator", "quota"], {}, {}, 1)
    assert (span.first, span.last) == (1, 1)


def test_a_passage_keeps_within_the_cap() -> None:
    pieces = [f"The frobnicator quota rule number {i} is explained here. " + FILLER * 8 for i in range(8)]
    _, chunks = cut(pieces)  # every chunk ~540 characters, every one holds the words
    for cap in (1_500, 600, 100):
        for span in passages(chunks, ["frobnicator", "quota"], {}, {}, 3, Look(cap=cap)):
            assert span.end - span.start <= cap or span.first == span.last  # a chunk longer than the cap: alone
    assert max(s.last - s.first for s in passages(chunks, ["frobnicator", "quota"], {}, {}, 3)) == 1


def test_passages_of_a_document_never_overlap_and_are_best_first() -> None:
    pieces = [("frobnicator quota " if i % 3 == 0 else "") + FILLER * 3 for i in range(12)]
    _, chunks = cut(pieces, overlap=30)
    found = passages(chunks, ["frobnicator", "quota"], {}, {}, 5)
    assert len(found) == 5
    for a in found:
        for b in found:  # no chunk in two, and no text either (adjacent chunks share 30 characters)
            assert a is b or (a.last < b.first and a.end <= b.start) or (b.last < a.first and b.end <= a.start)
    assert any(a.end == b.start for a in found for b in found), "test setup: two passages meet"
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)


def test_rare_words_heading_path_and_the_search_evidence_each_count() -> None:
    pieces = ["The limit applies to each worker. " + FILLER, FILLER * 3, "The limit applies to each socket. " + FILLER,
              FILLER * 3]
    _, chunks = cut(pieces)
    rare = passages(chunks, ["limit", "worker", "socket"], {"limit": 0.1, "worker": 0.2, "socket": 3.0}, {}, 1)
    assert rare[0].first == 2  # "socket" is the rarer word
    _, headed = cut(["The limit applies here. " + FILLER, FILLER * 3, "The limit applies here. " + FILLER, FILLER * 3],
                    headings=[["Workers"], ["Workers"], ["Sockets"], ["Sockets"]])
    assert passages(headed, ["limit", "sockets"], {}, {}, 1)[0].first == 2
    assert passages(headed, ["limit", "workers"], {}, {}, 1)[0].first == 0
    assert passages(headed, ["limit"], {}, {headed[2].id: 0.5, headed[0].id: 0.1}, 1)[0].first == 2
    assert passages(headed, ["limit"], {}, {headed[0].id: 0.5, headed[2].id: 0.1}, 1)[0].first == 0


# Search over the fakes: a document of token windows (30 tokens, 5 overlapping) with its answer across two.
DOC = (" ".join(f"filler{i}" for i in range(120)) + " to rotate the signing key stop the ledger daemon and purge"
       " its replay cache " + " ".join(f"tail{i}" for i in range(120)))


def ingest(w, request: IngestRequest):
    return IngestArtifact(w.embedder, w.artifacts, w.artifacts, catalog(TokenWindowChunker()), w.tokenizer,
                          ChunkSpec(30, 5, 30), w.split)(request)


def test_hybrid_and_artifact_search_return_passages_with_exact_offsets(aworld) -> None:
    doc = ingest(aworld, IngestRequest("doc", "drive", DOC, source_id="d")).artifact
    note = ingest(aworld, IngestRequest("note", "manual", "the ledger daemon is a short note")).artifact
    chunks = aworld.artifacts.chunks_of(doc.id)
    query = "rotate signing key ledger daemon purge replay cache"
    holding = [c for c in chunks if "signing" in c.content or "replay" in c.content]
    assert len(holding) >= 2 and "replay" not in holding[0].content, "test setup: the answer spans two chunks"
    retrieve = searcher(synced(aworld))
    on = {**PROFILES, "recall": replace(PROFILES["recall"], second_look=True)}  # opt-in for now (README)
    retrieve = replace(retrieve, config=replace(retrieve.config, profiles=on))
    for hits in (HybridSearch(retrieve, aworld.artifacts)(SearchRequest(query, limit=10)).hits,
                 ArtifactSearch(retrieve, aworld.artifacts)(query, 10)):
        first = next(h for h in hits if h.type == "chunk")
        start, end = first.fields["start_char"], first.fields["end_char"]
        assert first.content == DOC[start:end] and end - start <= 1_500
        assert "rotate the signing key stop the ledger daemon and purge its replay cache" in first.content
        assert first.fields["chunk_range"][0] < first.fields["chunk_range"][1]
        assert first.id in {c.id for c in chunks} and first.fields["snippet"].strip("…") in first.content
        mine = [h for h in hits if h.type == "chunk"]
        spans = sorted((h.fields["start_char"], h.fields["end_char"]) for h in mine)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "passages of a document never overlap"
        assert len({h.id for h in hits}) == len(hits)
        short = next(h for h in hits if h.id == note.id)  # a chunk-less short artifact: as it was
        assert short.type == "artifact" and "start_char" not in short.fields and short.content == note.content


def test_a_profile_turns_the_second_look_off(aworld) -> None:
    ingest(aworld, IngestRequest("doc", "drive", DOC, source_id="d"))
    retrieve = searcher(synced(aworld))
    profiles = {**PROFILES, "plain": replace(PROFILES["recall"], second_look=False),
                "recall": replace(PROFILES["recall"], second_look=True)}
    retrieve = replace(retrieve, config=replace(retrieve.config, profiles=profiles))
    query = "rotate signing key ledger daemon purge replay cache"
    off = HybridSearch(retrieve, aworld.artifacts)(SearchRequest(query, limit=5, profile="plain")).hits
    on = HybridSearch(retrieve, aworld.artifacts)(SearchRequest(query, limit=5)).hits
    assert off and all("start_char" not in h.fields for h in off)  # the chunks as retrieved
    assert all(h.content == c.content for h in off for c in [aworld.artifacts.get_chunks([h.id])[h.id]])
    assert on and all("start_char" in h.fields for h in on)


def test_the_setting_names_the_switch_and_refuses_anything_but_a_flag() -> None:
    weights = {"mine": {"lexical": 0.5, "semantic": 0.5, "second_look": True}, "recall": {"second_look": True}}
    config = Settings(memtrove_search_weights=weights).retrieval()
    assert config.profiles["mine"].second_look is True and config.profiles["recall"].second_look is True
    assert Settings().retrieval().profiles["recall"].second_look is False  # opt-in for now (README)
    with pytest.raises(ConfigurationError, match="second_look"):
        Settings(memtrove_search_weights={"mine": {"lexical": 0.5, "second_look": 2}}).retrieval()
    assert Weights(1.0, 0.0, 0.0).second_look is False


def test_a_passage_of_code_chunks_names_its_first_and_last_line() -> None:
    from domain.model import Hit
    from domain.search.second_look import Span, passage_hit

    text, chunks = cut(["def a():\n    pass\n", "def b():\n    pass\n", "def c():\n    pass\n"])
    chunks = [replace(c, metadata={"start_line": 1 + 2 * c.index, "end_line": 2 + 2 * c.index, "language": "python",
                                   "section_anchor": "x", "heading_levels": [1]}) for c in chunks]
    slot = Hit(chunks[1].id, "chunk", 0.5, chunks[1].content, {"artifact_id": "a", "chunk_index": 1,
                                                                "signals": {"lexical": 1}, "similarity": None})
    hit = passage_hit(slot, [slot], chunks, Span(0, 1, chunks[0].start_char, chunks[1].end_char, 1.0, 1))
    assert hit.content == text[:chunks[1].end_char] and hit.id == chunks[1].id
    assert hit.fields["structure"] == {"start_line": 1, "end_line": 4, "language": "python"}  # no anchor, no levels
    assert (hit.fields["start_char"], hit.fields["end_char"], hit.fields["chunk_range"]) == (0, chunks[1].end_char, [0, 1])
    assert hit.fields["signals"] == {"lexical": 1}


def test_query_words_match_text_words_by_their_root() -> None:
    from domain.search.passage_ranking import word_counter

    counted = word_counter(["sorting", "io", "Keys"])
    assert counted("Sorted lists sort; the IO layer and io, not ion or radio. KEYS, key, keyed.") == \
        {0: 2, 1: 2, 2: 3}  # sort- (sorted, sort), io alone (a short root), key- (KEYS, key, keyed)
    assert word_counter([])("anything") == {}


def test_the_second_look_reads_the_chunks_around_the_retrieved_ones(aworld) -> None:
    from domain.artifacts.usecases import CHUNKS
    from domain.model import Hit
    from domain.search.second_look import SecondLook
    from domain.search.lexical import LexicalStats

    doc = ingest(aworld, IngestRequest("doc", "drive", DOC, source_id="d")).artifact
    chunks = aworld.artifacts.chunks_of(doc.id)
    far = next(c for c in chunks if "replay" in c.content)
    assert far.index >= 5, "test setup: the answer lies far from the first chunks"
    retrieved = [Hit(chunks[1].id, "chunk", 0.5, chunks[1].content, {"artifact_id": doc.id, "chunk_index": 1})]
    stats = lambda _c, words, _t: LexicalStats(len(chunks), {w: 1 for w in words})  # noqa: E731
    query = "purge its replay cache"
    near = SecondLook(aworld.artifacts, stats, Look(reach=2))(query, retrieved, [CHUNKS])
    everywhere = SecondLook(aworld.artifacts, stats, Look(reach=0))(query, retrieved, [CHUNKS])
    assert near[0].fields["start_char"] >= chunks[0].start_char and near[0].fields["end_char"] <= chunks[3].end_char
    assert "replay cache" in everywhere[0].content and "replay cache" not in near[0].content


def test_a_chunk_kept_out_of_the_indexes_is_in_no_passage() -> None:
    # An email's quoted history (the email chunker marks it ``indexed: False``) holding the words.
    text, chunks = cut(["Thanks, the frobnicator quota is fixed. " + FILLER, "> the frobnicator quota broke. " + FILLER,
                        FILLER * 2])
    chunks[1] = replace(chunks[1], metadata={"indexed": False})
    found = passages(chunks, ["frobnicator", "quota"], {}, {}, 3)
    assert found and all(not s.first <= 1 <= s.last for s in found), found
