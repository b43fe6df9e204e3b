"""The end-to-end scenario every transport must pass.

Plain async functions taking a connected ``mcp.Client``. A module runs them in order against one
server (one data directory), so each check creates the items it looks at and compares relative to
what was there before, never to absolute totals.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

EXPECTED_TOOLS = {
    "memory_store", "memory_search", "memory_list", "memory_delete",
    "history_append", "history_get", "embedding_health",
    "artifact_ingest", "artifact_search", "artifact_get", "artifact_delete", "hybrid_search", "artifact_reembed",
    "artifact_resolve",  # retention until_resolved (issue 13): spec 000's 13 tools and this one
    "memory_get",  # a found memory read whole (issue 23)
    "memory_history",  # a memory's versions (issue 26)
}
MEMORY_ID = re.compile(r"^mem_[0-9a-f]{32}$")
UTC_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
SEED_CONVERSATION = "e2e-seed-conversation"
SEED_MEMORY = "The user's home city is Lisbon"
SNAPSHOT_LIMIT = 100


# ------------------------------------------------------------------------------------- helpers

def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def ok(result: Any) -> dict[str, Any]:
    """The structured content of a successful call (fails with the server's text otherwise)."""
    assert not result.is_error, f"unexpected tool error: {text_of(result)!r} {result.structured_content!r}"
    assert isinstance(result.structured_content, dict), f"no structured content: {text_of(result)!r}"
    return result.structured_content


async def call_ok(client: Any, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return ok(await client.call_tool(tool, arguments or {}))


async def store(client: Any, content: str, type: str = "fact", confidence: float = 0.8,
                **extra: Any) -> dict[str, Any]:
    stored = await call_ok(client, "memory_store",
                           {"content": content, "type": type, "confidence": confidence, **extra})
    assert MEMORY_ID.match(stored["id"]), stored
    return stored


async def search(client: Any, query: str, **options: Any) -> dict[str, Any]:
    found = await call_ok(client, "memory_search", {"query": query, **options})
    assert found["count"] == len(found["results"]), found
    return found


async def list_memories(client: Any, **options: Any) -> dict[str, Any]:
    listed = await call_ok(client, "memory_list", options)
    assert listed["count"] == len(listed["results"]), listed
    return listed


def ids(hits: dict[str, Any]) -> list[str]:
    return [h["id"] for h in hits["results"]]


async def stored_vectors(client: Any) -> dict[str, int]:
    return (await call_ok(client, "embedding_health"))["stored_vectors"]


def new_conversation(label: str) -> str:
    return f"e2e-{label}-{uuid.uuid4().hex[:8]}"


async def seed(client: Any) -> None:
    """What the bad-input checks watch: one memory and two turns of a known conversation."""
    await store(client, SEED_MEMORY, "fact", 0.9)
    for index, (role, content) in enumerate([("user", "Where do I live?"), ("assistant", "In Lisbon.")]):
        await call_ok(client, "history_append", {"conversation_id": SEED_CONVERSATION, "role": role,
                                                  "content": content, "turn_index": index})


async def snapshot(client: Any) -> dict[str, Any]:
    """Everything a bad call could have changed: memories, the seed conversation, vector counts."""
    listed = await list_memories(client, limit=SNAPSHOT_LIMIT)
    assert listed["count"] < SNAPSHOT_LIMIT, "too many memories for a complete snapshot"
    history = await call_ok(client, "history_get", {"conversation_id": SEED_CONVERSATION, "limit": 50})
    return {
        "memories": [(h["id"], h["content"], h["memory_type"], h["confidence"]) for h in listed["results"]],
        "history": [(t["id"], t["role"], t["content"], t["ts"]) for t in history["turns"]],
        "vectors": await stored_vectors(client),
    }


# --------------------------------------------------------------------------------------- checks

async def check_tools(client: Any) -> None:
    listed = await client.list_tools()
    names = [tool.name for tool in listed.tools]
    assert sorted(names) == sorted(EXPECTED_TOOLS), names
    schemas = {tool.name: tool.input_schema for tool in listed.tools}
    assert set(schemas["memory_store"]["required"]) == {"content", "type", "confidence"}
    assert set(schemas["history_append"]["required"]) == {"conversation_id", "role", "content", "turn_index"}
    assert schemas["memory_delete"]["required"] == ["memory_id"]
    assert not schemas["embedding_health"].get("required")


async def check_store_returns_memory(client: Any) -> None:
    conversation = new_conversation("store")
    result = await client.call_tool("memory_store", {
        "content": "The team ships a release every second Tuesday", "type": "project",
        "confidence": 0.75, "conversation_id": conversation})
    stored = ok(result)
    assert MEMORY_ID.match(stored["id"]), stored
    assert stored["memory_type"] == "project"
    assert stored["confidence"] == 0.75
    assert stored["conversation_id"] == conversation
    assert UTC_TS.match(stored["ts"]), stored["ts"]
    assert stored["embedding_provider"] == "local" and stored["embedding_dimensions"] == 384
    assert text_of(result).startswith(f"Stored memory [{stored['id']}]: The team ships a release")
    listed = await list_memories(client, limit=1)
    assert ids(listed) == [stored["id"]]
    assert listed["results"][0]["content"] == "The team ships a release every second Tuesday"


async def check_search_ranks_paraphrase_first(client: Any) -> None:
    dark = await store(client, "User prefers dark mode in every editor", "preference", 0.9)
    for content, kind in [("User's timezone is PST", "fact"),
                          ("Working on the billing service migration to PostgreSQL", "project"),
                          ("Decided to deploy on Fridays only after the code freeze", "decision"),
                          ("The user's dog is named Biscuit", "fact")]:
        await store(client, content, kind, 0.8)
    found = await search(client, "what colour theme does the user like", limit=5)
    assert found["query"] == "what colour theme does the user like"
    assert found["results"], found
    top = found["results"][0]
    assert top["id"] == dark["id"], [(h["content"], h["score"]) for h in found["results"]]
    # a hit carries its text once; a memory that fits the page reads whole (issue 23)
    assert top["type"] == "memory" and top["content"] == "User prefers dark mode in every editor"
    assert "snippet" not in top and top["provenance"]["ts"] == dark["ts"]
    assert top["memory_type"] == "preference" and top["confidence"] == 0.9
    scores = [h["score"] for h in found["results"]]
    assert scores == sorted(scores, reverse=True), scores
    assert len(set(ids(found))) == len(found["results"]), "a memory appears twice"
    one = await search(client, "what colour theme does the user like", limit=1)
    assert ids(one) == [dark["id"]]


async def check_memory_search_modes(client: Any) -> None:
    """A rare name is found by words; min_confidence holds in every mode; each hit names its signals."""
    run = uuid.uuid4().hex[:8]
    low = await store(client, f"The courier code for parcel {run} is QX-{run}", "fact", 0.2)
    high = await store(client, f"The backup courier for parcel {run} is Zanzibar Express", "fact", 0.9)
    lexical = await search(client, f"parcel {run}", limit=5, mode="lexical")
    assert set(ids(lexical)) >= {low["id"], high["id"]}, lexical
    assert all(set(h["signals"]) <= {"lexical", "exact"} and h["similarity"] is None for h in lexical["results"])
    strict = await search(client, f"parcel {run}", limit=5, mode="lexical", min_confidence=0.5)
    assert low["id"] not in ids(strict) and high["id"] in ids(strict), strict
    vector = await search(client, "which courier delivers the parcel", limit=20, mode="vector", min_confidence=0.5)
    assert low["id"] not in ids(vector) and all(set(h["signals"]) == {"semantic"} for h in vector["results"])
    fused = await search(client, f"Zanzibar courier {run}", limit=3)
    assert ids(fused)[0] == high["id"] and {"lexical", "semantic"} <= set(fused["results"][0]["signals"])


async def check_min_confidence(client: Any) -> None:
    tea = await store(client, "The user drinks green tea every morning", "preference", 0.3)
    coffee = await store(client, "The user drinks black coffee after lunch", "preference", 0.95)
    water = await store(client, "The user drinks sparkling water with dinner", "preference", 1.0)
    query = "what does the user like to drink"
    everything = await search(client, query, limit=20)
    assert {tea["id"], coffee["id"], water["id"]} <= set(ids(everything)), everything
    filtered = await search(client, query, limit=20, min_confidence=0.5)
    assert tea["id"] not in ids(filtered)
    assert {coffee["id"], water["id"]} <= set(ids(filtered))
    assert all(h["confidence"] >= 0.5 for h in filtered["results"]), filtered
    exact = await search(client, query, limit=20, min_confidence=1.0)
    assert water["id"] in ids(exact), "a confidence equal to min_confidence must be kept"
    assert all(h["confidence"] == 1.0 for h in exact["results"]), exact


async def check_list_newest_first(client: Any) -> None:
    first = await store(client, "Decided to keep the API versioned under /v2", "decision", 0.8)
    second = await store(client, "Decided to use SQLite for local development", "decision", 0.8)
    third = await store(client, "Decided to release the CLI under Apache-2.0", "decision", 0.8)
    everything = await list_memories(client, limit=100)
    assert everything["results"][0]["id"] == third["id"], "the newest memory must come first"
    order = ids(everything)
    assert order.index(third["id"]) < order.index(second["id"]) < order.index(first["id"])
    stamps = [h["ts"] for h in everything["results"]]
    assert all(UTC_TS.match(ts) for ts in stamps), stamps
    assert _epochs_descending(stamps), stamps
    assert len({h["memory_type"] for h in everything["results"]}) > 1, "an unfiltered list mixes types"
    two = await list_memories(client, limit=2)
    assert ids(two) == order[:2]
    default = await list_memories(client)
    assert ids(default) == order[:20], "the default limit is 20"
    result = await client.call_tool("memory_list", {"limit": 2})
    assert text_of(result).startswith("Found 2 memories:")


async def check_list_type_filter(client: Any) -> None:
    older = await store(client, "Decided to pin every dependency in the lock file", "decision", 0.7)
    newer = await store(client, "Decided to run the test suite on every push", "decision", 0.7)
    await store(client, "The office coffee machine is on the third floor", "fact", 0.7)
    decisions = await list_memories(client, type="decision", limit=100)
    assert decisions["results"], decisions
    assert all(h["memory_type"] == "decision" for h in decisions["results"]), decisions
    order = ids(decisions)
    assert order[0] == newer["id"] and order.index(newer["id"]) < order.index(older["id"])
    facts = await list_memories(client, type="fact", limit=100)
    assert all(h["memory_type"] == "fact" for h in facts["results"])
    assert older["id"] not in ids(facts)
    assert (await list_memories(client, type="decision", limit=1))["count"] == 1


async def check_delete(client: Any) -> None:
    query = "where does the user's cat like to sleep"
    cat = await store(client, "The user's cat is called Mochi and sleeps on the keyboard", "fact", 0.9)
    assert (await search(client, query, limit=3))["results"][0]["id"] == cat["id"]
    result = await client.call_tool("memory_delete", {"memory_id": cat["id"]})
    assert ok(result) == {"id": cat["id"], "deleted": True}
    assert text_of(result) == f"Deleted memory: {cat['id']}"
    assert cat["id"] not in ids(await search(client, query, limit=20))
    assert cat["id"] not in ids(await list_memories(client, limit=100))
    again = await client.call_tool("memory_delete", {"memory_id": cat["id"]})
    assert again.is_error, text_of(again)
    error = (again.structured_content or {}).get("error") or {}
    assert error.get("type") == "not_found", again.structured_content
    assert cat["id"] in error.get("message", "")


async def check_history_append_statuses(client: Any) -> None:
    conversation = new_conversation("append")
    before = (await stored_vectors(client))["history"]
    turn = {"conversation_id": conversation, "role": "user", "content": "How do I implement auth?",
            "turn_index": 0}
    result = await client.call_tool("history_append", {**turn, "ts": "2025-12-25T11:30:00+01:00"})
    appended = ok(result)
    assert appended["status"] == "appended"
    assert appended["id"] == f"{conversation}_turn_0"
    assert appended["ts"] == "2025-12-25T10:30:00Z"
    assert appended["role"] == "user" and appended["turn_index"] == 0
    assert text_of(result) == f"Appended turn 0 to {conversation}"
    after_append = (await stored_vectors(client))["history"]
    assert after_append == before + 1, (before, after_append)

    same = ok(await client.call_tool("history_append", turn))
    assert same["status"] == "unchanged" and same["ts"] == "2025-12-25T10:30:00Z", same
    same_ts = ok(await client.call_tool("history_append", {**turn, "ts": "2025-12-25T10:30:00Z"}))
    assert same_ts["status"] == "unchanged", same_ts

    result = await client.call_tool("history_append", {**turn, "content": "How do I implement OAuth?"})
    replaced = ok(result)
    assert replaced["status"] == "replaced"
    assert text_of(result) == f"Replaced turn 0 of {conversation}"
    history = await call_ok(client, "history_get", {"conversation_id": conversation})
    assert [(t["turn_index"], t["content"]) for t in history["turns"]] == [(0, "How do I implement OAuth?")]
    assert (await stored_vectors(client))["history"] == after_append, "a replaced turn leaves old vectors behind"


async def check_history_ts_normalised(client: Any) -> None:
    conversation = new_conversation("ts")
    cases = [
        ("2025-06-01T08:00:00", "2025-06-01T08:00:00Z"),
        ("2025-06-01T08:00:00.250-05:00", "2025-06-01T13:00:00.250000Z"),
        ("2025-06-01T23:30:00+02:00", "2025-06-01T21:30:00Z"),
        ("2025-06-01T10:00:00Z", "2025-06-01T10:00:00Z"),
    ]
    for index, (given, expected) in enumerate(cases):
        turn = ok(await client.call_tool("history_append", {
            "conversation_id": conversation, "role": "system", "content": f"tick {index}",
            "turn_index": index, "ts": given}))
        assert turn["ts"] == expected, (given, turn["ts"])
    history = await call_ok(client, "history_get", {"conversation_id": conversation})
    assert [t["ts"] for t in history["turns"]] == [expected for _, expected in cases]
    now = ok(await client.call_tool("history_append", {
        "conversation_id": conversation, "role": "user", "content": "no ts given", "turn_index": 9}))
    assert UTC_TS.match(now["ts"]), now["ts"]


async def check_history_get_order_and_limit(client: Any) -> None:
    conversation = new_conversation("get")
    turns = {i: ("user" if i % 2 == 0 else "assistant", f"message number {i}") for i in range(5)}
    for index in (2, 0, 1, 4, 3):  # appended out of order on purpose
        role, content = turns[index]
        await call_ok(client, "history_append", {"conversation_id": conversation, "role": role,
                                                  "content": content, "turn_index": index})
    result = await client.call_tool("history_get", {"conversation_id": conversation})
    everything = ok(result)
    assert everything["conversation_id"] == conversation and everything["count"] == 5
    assert [(t["turn_index"], t["role"], t["content"]) for t in everything["turns"]] == [
        (i, *turns[i]) for i in range(5)]
    assert text_of(result).splitlines() == [f"{turns[i][0]}: {turns[i][1]}" for i in range(5)]
    recent = await call_ok(client, "history_get", {"conversation_id": conversation, "limit": 2})
    assert [t["turn_index"] for t in recent["turns"]] == [3, 4], "the latest turns, oldest first"
    widest = await call_ok(client, "history_get", {"conversation_id": conversation, "limit": 50})
    assert widest["count"] == 5
    empty = await call_ok(client, "history_get", {"conversation_id": new_conversation("none")})
    assert empty["count"] == 0 and empty["turns"] == []


async def check_embedding_health(client: Any) -> None:
    result = await client.call_tool("embedding_health", {})
    report = ok(result)
    assert report["api_status"] == "healthy", report
    assert report["dimensions"] == 384 and report["test_embedding_dimensions"] == 384
    assert report["dimensions_match"] is True
    assert report["provider"] == "local" and report["model"] == "all-MiniLM-L6-v2"
    assert set(report["stored_vectors"]) == {"memory", "history"}
    assert report["stored_vectors"]["memory"] >= 1 and report["stored_vectors"]["history"] >= 2
    assert '"api_status": "healthy"' in text_of(result)


async def check_limits_accepted(client: Any) -> None:
    """The edges of every range are inside it."""
    longest = await store(client, "z" * 10_000, "fact", 0.0,
                          conversation_id="c" * 100)
    assert longest["conversation_id"] == "c" * 100 and longest["confidence"] == 0.0
    await store(client, "x", "fact", 1.0)
    assert (await search(client, "q" * 500, limit=20))["count"] >= 1
    await search(client, "anything", limit=1, min_confidence=1.0)
    many_pieces = await search(client, "z" * 40, limit=20)
    assert len(set(ids(many_pieces))) == many_pieces["count"], "a memory of many pieces appears twice"
    assert longest["id"] in ids(many_pieces)
    await list_memories(client, limit=100)
    await call_ok(client, "history_append", {"conversation_id": "h" * 100, "role": "assistant",
                                              "content": "edge", "turn_index": 0})
    await call_ok(client, "history_get", {"conversation_id": "h" * 100, "limit": 50})
    await call_ok(client, "history_get", {"conversation_id": "h" * 100, "limit": 1})


ROLLBACK = ("Rollback procedure for the payments service: freeze deploys in the release channel and tell the "
            "on-call engineer. Then run kubectl rollout undo deployment/payments --namespace prod --to-revision=41 "
            "and wait until every pod reports ready. Check the error dashboard for five minutes; if errors stay "
            "above one percent, page the database team, because the migration may need its own down step: psql -f "
            "migrations/down/2026_11_add_ledger_index.sql against the primary. Finally unfreeze deploys, post the "
            "revision numbers in the incident channel and open a ticket for the root cause before Tuesday.")


async def check_a_found_memory_reads_whole(client: Any) -> None:
    medium = await store(client, ROLLBACK, "project", 0.9)
    runbook = await store(client, "Quarterly restore drill runbook. " + " ".join(
        f"Step {i}: restore replica {i} from the nightly snapshot and compare its row counts." for i in range(80)),
        "project", 0.9)
    found = await call_ok(client, "memory_search", {"query": "how do I roll back the payments deploy", "limit": 5})
    hit = next(h for h in found["results"] if h["id"] == medium["id"])
    assert hit["content"] == ROLLBACK and "snippet" not in hit and "truncated" not in hit
    found = await call_ok(client, "memory_search", {"query": "restore replica from the nightly snapshot", "limit": 5})
    cut = next(h for h in found["results"] if h["id"] == runbook["id"])
    assert cut["truncated"] is True and len(cut["snippet"]) < 400 and "content" not in cut
    whole = await call_ok(client, "memory_get", {"memory_id": runbook["id"]})
    assert whole["content"].endswith("Step 79: restore replica 79 from the nightly snapshot and compare its row counts.")
    for memory in (medium, runbook):
        await call_ok(client, "memory_delete", {"memory_id": memory["id"]})


CHECKS = [
    check_tools, check_a_found_memory_reads_whole, check_store_returns_memory, check_search_ranks_paraphrase_first, check_memory_search_modes,
    check_min_confidence,
    check_list_newest_first, check_list_type_filter, check_delete, check_history_append_statuses,
    check_history_ts_normalised, check_history_get_order_and_limit, check_embedding_health,
    check_limits_accepted,
]


def _epochs_descending(stamps: list[str]) -> bool:
    from datetime import datetime

    epochs = [datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() for ts in stamps]
    return epochs == sorted(epochs, reverse=True)


# ------------------------------------------------------------------------------------ bad input

@dataclass(frozen=True)
class BadInput:
    """One bad call: the error it must return, the field it must name, what the message must say."""

    id: str
    tool: str
    arguments: dict[str, Any]
    field: str | None
    kind: str = "validation_error"
    mentions: tuple[str, ...] = field(default=())


_STORE = {"content": "A perfectly fine memory", "type": "fact", "confidence": 0.5}
_APPEND = {"conversation_id": SEED_CONVERSATION, "role": "user", "content": "Changed my mind", "turn_index": 0}
UNKNOWN_ID = "mem_" + "0" * 32

BAD_INPUTS = [
    BadInput("store-empty-content", "memory_store", {**_STORE, "content": ""}, "content", mentions=("10000",)),
    BadInput("store-whitespace-content", "memory_store", {**_STORE, "content": "  \n\t  "}, "content"),
    BadInput("store-content-10001", "memory_store", {**_STORE, "content": "y" * 10_001}, "content",
             mentions=("10000",)),
    BadInput("store-bad-type", "memory_store", {**_STORE, "type": "opinion"}, "type",
             mentions=("opinion", "preference")),
    BadInput("store-confidence-1.5", "memory_store", {**_STORE, "confidence": 1.5}, "confidence",
             mentions=("1.0",)),
    BadInput("store-confidence-abc", "memory_store", {**_STORE, "confidence": "abc"}, "confidence"),
    BadInput("store-confidence-true", "memory_store", {**_STORE, "confidence": True}, "confidence"),
    BadInput("store-conversation-id-101", "memory_store", {**_STORE, "conversation_id": "c" * 101},
             "conversation_id", mentions=("100",)),
    BadInput("store-missing-content", "memory_store", {"type": "fact", "confidence": 0.5}, "content"),
    BadInput("search-query-501", "memory_search", {"query": "q" * 501}, "query", mentions=("500",)),
    BadInput("search-empty-query", "memory_search", {"query": " "}, "query"),
    BadInput("search-limit-0", "memory_search", {"query": "dark mode", "limit": 0}, "limit", mentions=("20",)),
    BadInput("search-limit-21", "memory_search", {"query": "dark mode", "limit": 21}, "limit", mentions=("20",)),
    BadInput("search-limit-true", "memory_search", {"query": "dark mode", "limit": True}, "limit"),
    BadInput("search-bad-mode", "memory_search", {"query": "dark mode", "mode": "semantic"}, "mode",
             mentions=("hybrid", "vector", "lexical")),
    BadInput("search-bad-profile", "memory_search", {"query": "dark mode", "profile": "fast"}, "profile",
             mentions=("recall",)),
    BadInput("search-min-confidence-negative", "memory_search", {"query": "dark mode", "min_confidence": -0.1},
             "min_confidence"),
    BadInput("list-limit-101", "memory_list", {"limit": 101}, "limit", mentions=("100",)),
    BadInput("list-bad-type", "memory_list", {"type": "opinion"}, "type"),
    BadInput("delete-without-prefix", "memory_delete", {"memory_id": "abc123def456"}, "memory_id",
             mentions=("mem_",)),
    BadInput("delete-wrong-form", "memory_delete", {"memory_id": "mem_abc123def456"}, "memory_id"),
    BadInput("delete-unknown-id", "memory_delete", {"memory_id": UNKNOWN_ID}, None, kind="not_found",
             mentions=(UNKNOWN_ID,)),
    BadInput("delete-missing-id", "memory_delete", {}, "memory_id"),
    BadInput("append-conversation-id-101", "history_append", {**_APPEND, "conversation_id": "c" * 101},
             "conversation_id", mentions=("100",)),
    BadInput("append-role-robot", "history_append", {**_APPEND, "role": "robot"}, "role",
             mentions=("robot", "assistant")),
    BadInput("append-turn-index-negative", "history_append", {**_APPEND, "turn_index": -1}, "turn_index"),
    BadInput("append-turn-index-2**63", "history_append", {**_APPEND, "turn_index": 2**63}, "turn_index"),
    BadInput("append-ts-yesterday", "history_append", {**_APPEND, "ts": "yesterday"}, "ts",
             mentions=("yesterday",)),
    BadInput("append-empty-content", "history_append", {**_APPEND, "content": ""}, "content"),
    BadInput("append-missing-turn-index", "history_append",
             {k: v for k, v in _APPEND.items() if k != "turn_index"}, "turn_index"),
    BadInput("get-limit-51", "history_get", {"conversation_id": SEED_CONVERSATION, "limit": 51}, "limit",
             mentions=("50",)),
    BadInput("get-conversation-id-101", "history_get", {"conversation_id": "c" * 101}, "conversation_id"),
]


async def check_bad_input(client: Any, case: BadInput) -> None:
    """The call is refused with a structured error naming the field, and nothing changed."""
    before = await snapshot(client)
    result = await client.call_tool(case.tool, case.arguments)
    text = text_of(result)
    assert result.is_error, f"{case.id}: accepted: {result.structured_content!r}"
    error = (result.structured_content or {}).get("error")
    assert isinstance(error, dict), (
        f"{case.id}: no structured error {{type, message, field}}; structured_content="
        f"{result.structured_content!r}, text={text!r}")
    assert error.get("type") == case.kind, error
    message = error.get("message", "")
    assert message and message in text, (error, text)
    if case.field is not None:
        assert error.get("field") == case.field, error
        assert case.field.lower() in message.lower(), f"message does not name {case.field!r}: {message!r}"
    for needle in case.mentions:
        assert needle in message, f"message does not mention {needle!r}: {message!r}"
    assert "Traceback" not in text
    assert await snapshot(client) == before, f"{case.id}: a refused call changed something"
