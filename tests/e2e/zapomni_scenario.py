"""The spec 002 ("Zapomni") end-to-end scenario: add_memory, search_memory, get_stats over any transport.

Plain async functions taking a connected ``mcp.Client`` and the ``Notes`` that ``seed`` added. Each
check compares relative to what was there before (counts before and after), never to absolute
totals, and finds its memories by their ids.

The contract (decided with the implementer): ``add_memory`` answers ``{"status": "success",
"memory_id": "art_" + 32 hex, "chunks_created", "text_preview"}``; ``search_memory`` answers
``{"status": "success", "count", "results": [{"memory_id", "text", "similarity_score", "tags", "source",
"timestamp"}]}`` and filters by ``date_from``, ``date_to`` (the metadata ``date``), ``tags`` and
``source``; ``get_stats`` answers ``{"status": "success", "statistics": {...}}``; an error is a tool
error whose structured content is ``{"status": "error", "error": <message>, "field": <parameter>}``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.scenario import text_of
from tests.e2e.sessions_scenario import PAYMENT_AUDIT, SECTION_QUERIES, SESSION_TOOLS, list_all_tools

MEMORY_ID = re.compile(r"^art_[0-9a-f]{32}$")
ZAPOMNI_TOOLS = {"add_memory", "search_memory", "get_stats", "get_related", "build_graph", "graph_status",
                 "unmerge_entity"}
MAX_TEXT = 10_000_000
MAX_QUERY = 1_000
RESULT_FIELDS = {"memory_id", "text", "similarity_score", "tags", "source", "timestamp"}
STATISTICS_FIELDS = {"total_memories", "total_chunks", "database_size_mb", "graph_name", "cache_hit_rate",
                     "avg_query_latency_ms"}

# Four notes about one harbour lighthouse (three dates, two tags, three sources) and one about bread.
LIGHTHOUSE_QUERY = "repairs and upkeep of the old harbour lighthouse"
NOTES = {
    "lamp": ("The Kivik harbour lighthouse lamp was repaired on 10 March 2023: the rotating Fresnel lens "
             "bearing had seized, and the keeper replaced it with a sealed ball bearing from the mainland depot.",
             {"tags": ["lighthouse", "maintenance"], "source": "field-notes", "date": "2023-03-10T09:00:00Z"}),
    "logbook": ("The Kivik lighthouse keepers' logbooks from 1901 to 1964 were scanned in June 2024; the "
                "harbour museum now holds digital copies of all thirty-two volumes of lighthouse records.",
                {"tags": ["lighthouse", "archive"], "source": "archive-scan", "date": "2024-06-15T12:00:00Z"}),
    "foghorn": ("The fog horn of the Kivik harbour lighthouse was replaced in January 2025 by an electric "
                "diaphragm horn audible for three nautical miles, ending decades of compressed-air repairs.",
                {"tags": ["lighthouse", "maintenance"], "source": "work-orders", "date": "2025-01-20T08:30:00Z"}),
    "bread": ("Feed the rye sourdough starter twice a day with equal weights of flour and water, and keep it at "
              "about 24 degrees so that it doubles within six hours.",
              {"tags": ["baking"], "source": "field-notes", "date": "2024-02-01T07:00:00Z"}),
}


@dataclass
class Notes:
    """The ids of the notes ``seed`` added, by key, and their add_memory answers."""

    ids: dict[str, str] = field(default_factory=dict)
    added: dict[str, dict[str, Any]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------- helpers

def ok(result: Any) -> dict[str, Any]:
    body = result.structured_content
    assert not result.is_error, f"unexpected tool error: {text_of(result)!r} {body!r}"
    assert isinstance(body, dict), f"no structured content: {text_of(result)!r}"
    assert body.get("status") == "success", body
    return body


async def call(client: Any, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return ok(await client.call_tool(tool, arguments or {}))


async def add(client: Any, text: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"text": text}
    if metadata is not None:
        arguments["metadata"] = metadata
    body = await call(client, "add_memory", arguments)
    assert isinstance(body.get("memory_id"), str) and MEMORY_ID.match(body["memory_id"]), body
    return body


async def search(client: Any, query: str, **options: Any) -> dict[str, Any]:
    body = await call(client, "search_memory", {"query": query, **options})
    assert body["count"] == len(body["results"]), body
    return body


async def statistics(client: Any) -> dict[str, Any]:
    return (await call(client, "get_stats"))["statistics"]


async def snapshot(client: Any) -> tuple[int, int]:
    stats = await statistics(client)
    return stats["total_memories"], stats["total_chunks"]


def ids(body: dict[str, Any]) -> list[str]:
    return [r["memory_id"] for r in body["results"]]


async def seed(client: Any) -> Notes:
    notes = Notes()
    for key, (text, metadata) in NOTES.items():
        result = await client.call_tool("add_memory", {"text": text, "metadata": metadata})
        body = result.structured_content
        assert not result.is_error and isinstance(body, dict) and body.get("status") == "success", (
            f"seed: add_memory ({key}) failed: {text_of(result)!r} {body!r}")
        notes.ids[key] = body["memory_id"]
        notes.added[key] = body
    return notes


# --------------------------------------------------------------------------------------- checks

async def check_tools(client: Any, notes: Notes) -> None:
    tools = await list_all_tools(client)
    names = [t.name for t in tools]
    assert len(names) == len(set(names)), f"duplicate tool names: {names}"
    assert ZAPOMNI_TOOLS <= set(names), f"missing: {sorted(ZAPOMNI_TOOLS - set(names))}"
    assert not SESSION_TOOLS & set(names), f"MEMTROVE_TOOLSETS=zapomni lists spec 001 tools: {names}"
    schemas = {t.name: t.input_schema for t in tools}
    assert set(schemas["add_memory"]["properties"]) == {"text", "metadata"}, schemas["add_memory"]
    assert schemas["add_memory"].get("required") == ["text"], schemas["add_memory"]
    assert set(schemas["search_memory"]["properties"]) == {"query", "limit", "filters"}, schemas["search_memory"]
    assert schemas["search_memory"].get("required") == ["query"], schemas["search_memory"]
    assert schemas["search_memory"]["properties"]["limit"].get("default") == 10, schemas["search_memory"]
    # Spec 002's limits, published (our own checks still decide, with the spec's messages).
    text, query = schemas["add_memory"]["properties"]["text"], schemas["search_memory"]["properties"]["query"]
    limit = schemas["search_memory"]["properties"]["limit"]
    assert (text.get("minLength"), text.get("maxLength")) == (1, MAX_TEXT), text
    assert (query.get("minLength"), query.get("maxLength")) == (1, MAX_QUERY), query
    assert (limit.get("minimum"), limit.get("maximum")) == (1, 100), limit
    assert not schemas["get_stats"].get("properties") and not schemas["get_stats"].get("required"), (
        schemas["get_stats"])


async def check_add_memory_result(client: Any, notes: Notes) -> None:
    text = ("The Vardø ferry timetable changes on 1 October: the morning crossing leaves at 06:40 instead of "
            "07:15, and the evening crossing is cancelled on Sundays until the spring schedule starts.")
    assert len(text) > 100
    body = await add(client, text, {"tags": ["ferry"], "source": "harbour-office", "date": "2025-09-20T10:00:00Z"})
    assert set(body) >= {"status", "memory_id", "chunks_created", "text_preview"}, body
    assert body["text_preview"] == text[:100], body["text_preview"]
    assert isinstance(body["chunks_created"], int) and body["chunks_created"] >= 0, body
    assert body.get("error") is None, body
    other = await add(client, "The Vardø ferry office closes at noon on public holidays.")
    assert other["memory_id"] != body["memory_id"]
    assert other["text_preview"] == "The Vardø ferry office closes at noon on public holidays."
    assert len(set(notes.ids.values())) == len(NOTES), f"two notes share an id: {notes.ids}"


async def check_get_stats(client: Any, notes: Notes) -> None:
    before = await statistics(client)
    missing = STATISTICS_FIELDS - set(before)
    assert not missing, f"missing {sorted(missing)}: {before}"
    assert isinstance(before["database_size_mb"], (int, float)) and before["database_size_mb"] > 0, before
    assert isinstance(before["graph_name"], str) and "memtrove" in before["graph_name"].lower(), before
    assert before["cache_hit_rate"] is None or 0.0 <= before["cache_hit_rate"] <= 1.0, before
    assert before["avg_query_latency_ms"] is None or before["avg_query_latency_ms"] >= 0.0, before
    assert before["total_memories"] >= len(NOTES) and before["total_chunks"] >= 0, before
    added = await add(client, "The Kivik lighthouse gallery railing was repainted in a lead-free red primer.",
                      {"tags": ["lighthouse"], "source": "work-orders"})
    after = await statistics(client)
    assert after["total_memories"] == before["total_memories"] + 1, (before, after)
    assert after["total_chunks"] >= before["total_chunks"] + added["chunks_created"], (before, after, added)


async def check_search_finds_paraphrase_first(client: Any, notes: Notes) -> None:
    body = await search(client, "when was the fog signal at Kivik swapped for an electric one")
    assert body["results"] and body["results"][0]["memory_id"] == notes.ids["foghorn"], body["results"]
    bread = await search(client, "how often should a sourdough starter be fed")
    assert bread["results"][0]["memory_id"] == notes.ids["bread"], bread["results"]


async def check_search_result_fields(client: Any, notes: Notes) -> None:
    body = await search(client, "Kivik lighthouse lamp Fresnel lens bearing repair")
    assert body["results"], body
    for r in body["results"]:
        missing = RESULT_FIELDS - set(r)
        assert not missing, f"missing {sorted(missing)}: {r!r}"
        assert MEMORY_ID.match(r["memory_id"]), r
        assert isinstance(r["similarity_score"], float) and 0.0 <= r["similarity_score"] <= 1.0, r
        assert isinstance(r["tags"], list) and isinstance(r["source"], str), r
        assert r["timestamp"] is None or isinstance(r["timestamp"], str), r
    top = body["results"][0]
    lamp_text, lamp_metadata = NOTES["lamp"]
    assert top["memory_id"] == notes.ids["lamp"], body["results"]
    assert top["text"].strip() and top["text"].strip() in lamp_text, top["text"]
    assert top["tags"] == lamp_metadata["tags"] and top["source"] == lamp_metadata["source"], top
    assert len(ids(body)) == len(set(ids(body))), f"a memory appears twice: {ids(body)}"


async def check_search_limit(client: Any, notes: Notes) -> None:
    one = await search(client, LIGHTHOUSE_QUERY, limit=1)
    assert one["count"] == 1, one
    everything = await search(client, LIGHTHOUSE_QUERY, limit=100)
    assert {notes.ids[k] for k in ("lamp", "logbook", "foghorn")} <= set(ids(everything)), everything
    default = await search(client, LIGHTHOUSE_QUERY)
    assert default["count"] <= 10, "the default limit is 10"


async def _filtered(client: Any, filters: dict[str, Any]) -> dict[str, Any]:
    return await search(client, LIGHTHOUSE_QUERY, limit=100, filters=filters)


async def check_filter_date_from(client: Any, notes: Notes) -> None:
    body = await _filtered(client, {"date_from": "2024-01-01T00:00:00Z"})
    got = set(ids(body))
    assert {notes.ids["logbook"], notes.ids["foghorn"]} <= got, body["results"]
    assert notes.ids["lamp"] not in got, "date_from let an older memory through"


async def check_filter_date_to(client: Any, notes: Notes) -> None:
    body = await _filtered(client, {"date_to": "2024-12-31T23:59:59Z"})
    got = set(ids(body))
    assert {notes.ids["lamp"], notes.ids["logbook"]} <= got, body["results"]
    assert notes.ids["foghorn"] not in got, "date_to let a newer memory through"


async def check_filter_date_range(client: Any, notes: Notes) -> None:
    body = await _filtered(client, {"date_from": "2024-01-01T00:00:00Z", "date_to": "2024-12-31T23:59:59Z"})
    got = set(ids(body))
    assert notes.ids["logbook"] in got, body["results"]
    assert not {notes.ids["lamp"], notes.ids["foghorn"]} & got, body["results"]


async def check_filter_tags(client: Any, notes: Notes) -> None:
    body = await _filtered(client, {"tags": ["maintenance"]})
    got = set(ids(body))
    assert {notes.ids["lamp"], notes.ids["foghorn"]} <= got, body["results"]
    assert notes.ids["logbook"] not in got, "the tags filter let an untagged memory through"
    assert all("maintenance" in r["tags"] for r in body["results"]), body["results"]


async def check_filter_source(client: Any, notes: Notes) -> None:
    body = await _filtered(client, {"source": "archive-scan"})
    assert ids(body) == [notes.ids["logbook"]], body["results"]
    field_notes = await _filtered(client, {"source": "field-notes"})
    assert notes.ids["lamp"] in ids(field_notes) and notes.ids["foghorn"] not in ids(field_notes), field_notes
    assert all(r["source"] == "field-notes" for r in field_notes["results"]), field_notes["results"]


async def check_long_text_is_chunked_and_found(client: Any, notes: Notes) -> None:
    body = await add(client, PAYMENT_AUDIT, {"tags": ["audit"], "source": "payments-team"})
    assert body["chunks_created"] > 0, f"a ~1,100-token text was not chunked: {body}"
    assert body["text_preview"] == PAYMENT_AUDIT[:100], body["text_preview"]
    found = await search(client, SECTION_QUERIES["Retry Storms"], limit=3)
    assert found["results"] and found["results"][0]["memory_id"] == body["memory_id"], found["results"]
    top = found["results"][0]["text"]
    assert "retr" in top.lower() or "jitter" in top.lower(), f"the hit is not the retry passage: {top[:200]!r}"
    assert len(top) < len(PAYMENT_AUDIT), "a hit of a chunked text is its chunk, not the whole text"


async def check_limits_accepted(client: Any, notes: Notes) -> None:
    """The edges of every range are inside it; metadata may be left out."""
    await search(client, "q" * MAX_QUERY, limit=1)
    await search(client, "lighthouse", limit=100)
    bare = await add(client, "A memory without any metadata at all: the harbour crane is rated for 40 tonnes.")
    found = await search(client, "what load is the harbour crane rated for", limit=3)
    assert bare["memory_id"] in ids(found), found
    hit = next(r for r in found["results"] if r["memory_id"] == bare["memory_id"])
    assert hit["tags"] == [], hit


async def check_stats_count_what_was_added(client: Any, notes: Notes) -> None:
    before = await statistics(client)
    long = await add(client, PAYMENT_AUDIT, {"tags": ["audit"], "source": "stats-check"})
    short = await add(client, "The Kivik pier lamp posts were fitted with LED lanterns in May 2025.",
                      {"source": "stats-check"})
    assert long["chunks_created"] > 0 and not long["duplicate"] and not short["duplicate"], (long, short)
    after = await statistics(client)
    assert after["total_memories"] == before["total_memories"] + 2, (before, after)
    assert after["total_chunks"] == before["total_chunks"] + long["chunks_created"] + short["chunks_created"], (
        before, after, long["chunks_created"], short["chunks_created"])


async def check_latency_is_reported_after_searches(client: Any, notes: Notes) -> None:
    for query in ("lighthouse lamp bearing", "sourdough starter feeding"):
        await search(client, query, limit=3)
    latency = (await statistics(client))["avg_query_latency_ms"]
    assert isinstance(latency, (int, float)) and not isinstance(latency, bool) and latency > 0, latency


async def check_same_memory_twice_is_one(client: Any, notes: Notes) -> None:
    text, metadata = NOTES["logbook"]
    before = await snapshot(client)
    again = await add(client, text, metadata)
    assert again["memory_id"] == notes.ids["logbook"] and again["duplicate"] is True, again
    assert notes.added["logbook"]["duplicate"] is False, notes.added["logbook"]
    assert await snapshot(client) == before, "adding a stored memory again changed the counts"
    other = await add(client, text, {**metadata, "source": "a second scan"})
    assert other["memory_id"] != notes.ids["logbook"] and other["duplicate"] is False, other


CHECKS = [
    check_tools, check_add_memory_result, check_get_stats, check_search_finds_paraphrase_first,
    check_search_result_fields, check_search_limit, check_filter_date_from, check_filter_date_to,
    check_filter_date_range, check_filter_tags, check_filter_source, check_long_text_is_chunked_and_found,
    check_limits_accepted, check_stats_count_what_was_added, check_latency_is_reported_after_searches,
    check_same_memory_twice_is_one,
]


async def check_core_delete_removes_a_memory(client: Any, notes: Notes) -> None:
    """With MEMTROVE_TOOLSETS=core,zapomni: core's artifact_delete removes a Zapomni memory everywhere."""
    added = await add(client, PAYMENT_AUDIT, {"tags": ["audit"], "source": "to-delete"})
    assert added["chunks_created"] > 0, added
    found = await search(client, SECTION_QUERIES["Retry Storms"], limit=5, filters={"source": "to-delete"})
    assert set(ids(found)) == {added["memory_id"]}, found
    before = await statistics(client)
    result = await client.call_tool("artifact_delete", {"artifact_id": added["memory_id"]})
    assert not result.is_error, text_of(result)
    after = await statistics(client)
    assert after["total_memories"] == before["total_memories"] - 1, (before, after)
    assert after["total_chunks"] == before["total_chunks"] - added["chunks_created"], (before, after, added)
    for options in ({"filters": {"source": "to-delete"}}, {}):
        gone = await search(client, SECTION_QUERIES["Retry Storms"], limit=100, **options)
        assert added["memory_id"] not in ids(gone), gone
    kept = await search(client, "how often should a sourdough starter be fed")
    assert notes.ids["bread"] in ids(kept), "the deletion took another memory with it"


# ------------------------------------------------------------------------------------ bad input

@dataclass(frozen=True)
class BadInput:
    """One refused call: the parameter it names and, when the spec fixes it, the exact message."""

    id: str
    tool: str
    arguments: Callable[[], dict[str, Any]]
    field: str
    message: str | None = None


BAD_INPUTS = [
    BadInput("text-whitespace", "add_memory", lambda: {"text": "  \n\t  "}, "text",
             "text cannot be empty or whitespace-only"),
    BadInput("text-empty", "add_memory", lambda: {"text": ""}, "text"),
    BadInput("text-10000001", "add_memory", lambda: {"text": "t" * (MAX_TEXT + 1)}, "text"),
    BadInput("text-missing", "add_memory", lambda: {"metadata": {"source": "nowhere"}}, "text"),
    BadInput("add-unknown-argument", "add_memory", lambda: {"text": "A fine text.", "meta": {}}, "meta"),
    BadInput("query-1001", "search_memory", lambda: {"query": "q" * (MAX_QUERY + 1)}, "query"),
    BadInput("query-whitespace", "search_memory", lambda: {"query": "   "}, "query",
             "query cannot be empty or whitespace-only"),
    BadInput("query-missing", "search_memory", lambda: {"limit": 5}, "query"),
    BadInput("limit-0", "search_memory", lambda: {"query": "lighthouse", "limit": 0}, "limit"),
    BadInput("limit-101", "search_memory", lambda: {"query": "lighthouse", "limit": 101}, "limit"),
    BadInput("search-unknown-argument", "search_memory", lambda: {"query": "lighthouse", "top_k": 3}, "top_k"),
    BadInput("text-number", "add_memory", lambda: {"text": 123}, "text"),
    BadInput("metadata-list", "add_memory", lambda: {"text": "Refused: metadata as a list.", "metadata": [1]},
             "metadata"),
    BadInput("metadata-tags-object", "add_memory",
             lambda: {"text": "Refused: tags as an object.", "metadata": {"tags": {"a": 1}}}, "tags"),
    BadInput("metadata-source-empty", "add_memory",
             lambda: {"text": "Refused: an empty source.", "metadata": {"source": ""}}, "source"),
    BadInput("metadata-date-unreadable", "add_memory",
             lambda: {"text": "Refused: an unreadable date.", "metadata": {"date": "last Tuesday"}}, "date"),
    BadInput("query-number", "search_memory", lambda: {"query": 123}, "query"),
    BadInput("query-empty", "search_memory", lambda: {"query": ""}, "query",
             "query cannot be empty or whitespace-only"),
    BadInput("limit-string", "search_memory", lambda: {"query": "lighthouse", "limit": "5"}, "limit"),
    BadInput("limit-true", "search_memory", lambda: {"query": "lighthouse", "limit": True}, "limit"),
    BadInput("limit-1.5", "search_memory", lambda: {"query": "lighthouse", "limit": 1.5}, "limit"),
    BadInput("filters-string", "search_memory", lambda: {"query": "lighthouse", "filters": "x"}, "filters"),
    BadInput("filters-unknown-key", "search_memory",
             lambda: {"query": "lighthouse", "filters": {"colour": "red"}}, "filters"),
    BadInput("filters-date-from-unreadable", "search_memory",
             lambda: {"query": "lighthouse", "filters": {"date_from": "yesterday"}}, "date_from"),
    BadInput("filters-date-from-after-date-to", "search_memory", lambda: {"query": "lighthouse", "filters": {
        "date_from": "2025-01-01T00:00:00Z", "date_to": "2024-01-01T00:00:00Z"}}, "date_from"),
    BadInput("filters-tags-number", "search_memory", lambda: {"query": "lighthouse", "filters": {"tags": 5}}, "tags"),
    BadInput("filters-source-empty", "search_memory", lambda: {"query": "lighthouse", "filters": {"source": ""}},
             "source"),
]


async def check_bad_input(client: Any, notes: Notes, case: BadInput) -> None:
    before = await snapshot(client)
    result = await client.call_tool(case.tool, case.arguments())
    body = result.structured_content
    assert result.is_error, f"{case.id}: accepted: {body!r}"
    assert isinstance(body, dict), f"{case.id}: no structured error; text={text_of(result)[:300]!r}"
    assert body.get("status") == "error", f"{case.id}: {body!r}"
    message = body.get("error")
    assert isinstance(message, str) and message.strip(), f"{case.id}: no message: {body!r}"
    assert body.get("field") == case.field, f"{case.id}: expected field {case.field!r}: {body!r}"
    if case.message is not None:
        assert message == case.message, f"{case.id}: {message!r}"
    assert case.field.lower() in message.lower(), f"{case.id}: message does not name {case.field!r}: {message!r}"
    assert "Traceback" not in text_of(result)
    assert await snapshot(client) == before, f"{case.id}: a refused call changed something"
