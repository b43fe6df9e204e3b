"""How the page words and reads things (issue 42, "the page"): the query's words marked whole and never
a stop word, counts with their noun, latencies estimated from histogram buckets on a log-scale chart,
meaning-only hits below "close" left out beside a record holding the query's word, a document's
overlapping chunks shown once, the audit log in one vocabulary, the edit form's change."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram

from domain.model import AuditEntry
from entrypoints.web import wording
from entrypoints.web.caller import ToolFailed
from entrypoints.web.health import bar_chart, latency_rows, position
from entrypoints.web.relevance import close_similarity, listed
from entrypoints.web.text import duration, highlight, plural
from entrypoints.web.views_browse import once
from entrypoints.web.views_change import memory_change


def marked(text: str, query: str) -> list[str]:
    return [part.split("</mark>")[0] for part in str(highlight(text, query)).split("<mark>")[1:]]


def test_only_whole_words_are_marked_never_inside_another_word() -> None:
    text = "Then run the doctest: None of the ones do it, one does."
    assert marked(text, "do the one doctest") == ["doctest", "ones", "one"]  # not "do", "the"; "None" intact
    assert marked("Brew it; brews and brewed, a brewery", "brew") == ["Brew", "brews", "brewed"]
    assert marked("Notes: the note was noted", "notes") == ["Notes", "note", "noted"]
    assert marked("call get_user_by_id in src/app.py", "where is get_user_by_id, src/app.py?") == [
        "get_user_by_id", "src/app.py"]
    assert marked("the and of", "the") == ["the"]  # a query of stop words only: its words are what it asks


def test_counts_carry_their_noun_in_the_singular_or_plural() -> None:
    assert [plural(n, "chunk") for n in (0, 1, 2)] == ["0 chunks", "1 chunk", "2 chunks"]
    assert (plural(1, "memory"), plural(3, "memory"), plural(2, "entity")) == ("1 memory", "3 memories",
                                                                               "2 entities")


def test_latency_is_interpolated_in_its_bucket_and_a_long_call_does_not_flatten_the_chart() -> None:
    registry = CollectorRegistry()
    latency = Histogram("memtrove_tool_latency_seconds", "latency", ["tool"], buckets=(0.01, 0.1, 1, 30),
                        registry=registry)
    for seconds in [0.02, 0.03, 0.04, 0.05]:
        latency.labels("memory_search").observe(seconds)
    latency.labels("artifact_ingest").observe(45)  # past the last finite bucket
    rows = {r["name"]: r for r in latency_rows(registry)}
    assert (rows["memory_search"]["p50_ms"], rows["memory_search"]["p95_ms"]) == (55.0, 95.5)  # not 100.0
    assert rows["artifact_ingest"]["p95_ms"] == 30_000.0 and rows["artifact_ingest"]["p95_over"]
    bars = {b["label"]: b for b in bar_chart(latency_rows(registry))["bars"]}
    assert bars["memory_search"]["width"] > 0.4 * bars["artifact_ingest"]["width"]  # log scale: both visible
    assert position(1.0) == 0.0 and position(60_000.0) == 1.0 and 0.5 < position(1_000.0) < 0.7
    assert [duration(v) for v in (0.4, 95.5, 1_000.0, 1_250.0, 30_000.0)] == ["0.4 ms", "96 ms", "1 s", "1.2 s",
                                                                              "30 s"]


def hit(text: str, similarity: float, *signals: str) -> dict:
    return {"text": text, "similarity": similarity, "signals": {s: 1 for s in signals or ("semantic",)}}


def test_meaning_only_hits_below_close_are_left_out_when_the_words_found_a_record() -> None:
    close = close_similarity(0.2)
    assert close == 0.44
    word = hit("Extra unique line zanzibarite.", 0.1, "lexical")
    near = hit("A mineral from the island", 0.6)
    far = [hit(f"Unrelated passage {i}", 0.21 + i / 100) for i in range(8)]
    kept, out = listed([word, *far, near], "zanzibarite", "hybrid", close, show_all=False)
    assert kept == [word, near] and out == far
    # The word in the text counts though BM25 gave it no rank (a store of one or two records).
    memory = hit("The team standup moved to 9:30", 0.3)
    assert listed([memory, *far], "standup", "hybrid", close, False) == ([memory], far)
    # Nothing left out: no hit holds the words, vector mode, or asked to show all.
    assert listed(far, "zanzibarite", "hybrid", close, False) == (far, [])
    assert listed([word, *far], "zanzibarite", "vector", close, False) == ([word, *far], [])
    assert listed([word, *far], "zanzibarite", "hybrid", close, True) == ([word, *far], [])


def chunk(index: int, start: int, end: int) -> dict:
    return {"chunk_id": f"c{index}", "chunk_index": index, "start_char": start, "end_char": end}


def test_overlapping_chunks_show_each_part_of_the_document_once() -> None:
    content = "0123456789abcdefghij"
    chunks = [chunk(0, 0, 8), chunk(1, 6, 14), chunk(2, 12, 20)]
    shown = once(content, chunks, None)
    assert "".join(c["text"] for c in shown) == content
    assert [c["skipped"] for c in shown] == [0, 2, 2]
    passage = once(content, chunks, "c1")  # the passage asked for whole; the chunk before stops at it
    assert [c["text"] for c in passage] == ["012345", "6789abcd", "efghij"]


def test_the_audit_says_what_was_done_to_which_kind_of_item() -> None:
    def entry(action: str, collection: str, **detail: object) -> AuditEntry:
        return AuditEntry(action=action, collection=collection, item_ids=("x",), actor="local", ts="t",
                          detail=dict(detail))

    assert wording.what(entry("create_relations", "graph")) == "added relations"
    assert wording.what(entry("create_entities", "graph")) == "added entities"
    assert wording.what(entry("import", "graph", item="relation")) == "imported relation"
    assert (wording.what(entry("store", "memory")), wording.kind("memory")) == ("stored", "memory")
    assert (wording.what(entry("appended", "history")), wording.kind("history")) == ("appended", "conversation turn")
    assert wording.what(entry("denied", "artifact", refused="get")) == "refused get"
    assert wording.action("create_relations") == "added relations" and wording.kind("history") == "conversation turn"


STORED = {"id": "mem_1", "content": "The ferry leaves at nine\n", "memory_type": "fact", "confidence": 0.8}


def form(**given: str) -> dict[str, str]:
    shown = {"content": "The ferry leaves at nine", "type": "fact", "confidence": "0.8", "visible_to": "",
             "retention_days": "", "sensitivity": "", "visibility_scope": "", "retention_policy": ""}  # "keep"
    return shown | given


def test_the_edit_form_sends_only_what_differs_from_the_stored_memory() -> None:
    assert memory_change(STORED, form()) == {}  # saved as shown: nothing to send
    assert memory_change(STORED, form(content="The ferry leaves at nine\r\n")) == {}  # a browser's CRLF
    assert memory_change(STORED, form(confidence="0.6", sensitivity="sensitive")) == {
        "confidence": 0.6, "sensitivity": "sensitive"}
    # A privacy field chosen is sent (memory_get does not tell it); the tool answers whether it changed.
    assert memory_change(STORED, form(sensitivity="normal")) == {"sensitivity": "normal"}
    assert memory_change(STORED, form(content="")) == {"content": ""}  # emptied: the tool names content
    with pytest.raises(ToolFailed) as refused:
        memory_change(STORED, form(confidence="high"))
    assert refused.value.field == "confidence"
