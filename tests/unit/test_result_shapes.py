"""What a caller sees of a hit and of an ingest: each text once, metadata once, ids compact."""

from __future__ import annotations

from domain.model import Hit
from entrypoints.mcp import render
from entrypoints.mcp.toolsets.artifacts import stored_ids
from entrypoints.mcp.toolsets.search import render_results

PROVENANCE = {"source_system": "drive", "source_id": "d1", "source_url": "https://x.example/d1", "title": "Plan",
              "ts": "2025-01-01T00:00:00Z", "embedding_provider": "fake", "embedding_model": "hash",
              "embedding_dimensions": 64}
CHUNK = "ructure of the queue.\n\n   The launch code is zebra, and it changes every week.  Keep it safe. The la"


def chunk_hit(**extra: object) -> Hit:
    return Hit("art_1::chunk::001::abcd1234", "chunk", 0.05, CHUNK, {
        "artifact_id": "art_1", "artifact_type": "doc", "chunk_index": 1, "provenance": PROVENANCE,
        "sensitivity": "normal", "visibility_scope": "me", "retention_policy": "forever",
        "collections": ["artifact_chunks"], "snippet": "…The launch code is zebra, and it changes every week.…",
        **extra})


def test_a_search_hit_carries_its_snippet_and_not_its_content() -> None:
    shown = render.hit(chunk_hit())
    assert list(shown)[:4] == ["id", "type", "score", "snippet"]
    assert "content" not in shown and "retention_policy" not in shown
    assert shown["provenance"] == PROVENANCE and shown["sensitivity"] == "normal"


def test_an_expanded_hit_carries_the_window_as_content_and_no_snippet() -> None:
    shown = render.hit(chunk_hit(expanded=True, neighbors=["art_1::chunk::000::0000aaaa"]))
    assert shown["content"] == CHUNK and "snippet" not in shown and "expanded" not in shown
    assert shown["neighbors"] == ["art_1::chunk::000::0000aaaa"]


def test_a_listed_memory_carries_its_content() -> None:
    listed = Hit("mem_1", "memory", 0.0, "likes tea", {"memory_type": "preference", "confidence": 0.9})
    assert render.hit(listed)["content"] == "likes tea"
    assert render.memory_line(listed, False).endswith("): likes tea")


def test_the_text_rendering_shows_the_snippet_on_one_line() -> None:
    text = render_results([chunk_hit()], ["artifacts", "artifact_chunks"])
    assert 'Snippet: "…The launch code is zebra, and it changes every week.…"' in text
    assert "Evidence: https://x.example/d1" in text and "Title: Plan" in text
    assert "ructure" not in text, "the text shows the snippet, not the chunk"


def test_stored_ids_list_the_artifact_and_its_first_chunks() -> None:
    ids = ["art_1", *(f"art_1::chunk::{i:03d}::abcd1234" for i in range(2500))]
    assert stored_ids(ids) == {"stored_ids": ids[:4], "stored_ids_omitted": 2497}
    assert stored_ids(["art_2"]) == {"stored_ids": ["art_2"], "stored_ids_omitted": 0}
    assert stored_ids(ids[:3]) == {"stored_ids": ids[:3], "stored_ids_omitted": 0}
