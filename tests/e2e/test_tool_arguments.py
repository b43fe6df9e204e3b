"""Over MCP (stdio): undeclared arguments, out-of-range timestamps, ids with a final newline and content
over 10 MB of UTF-8 are tool errors naming the field, and change nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import scenario
from tests.e2e.scenario import SEED_CONVERSATION, UNKNOWN_ID, BadInput
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow

# The reembed target is only built, never called, before the id is refused: no server answers there.
ENV = {"MEMTROVE_SHARED": "false", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_EMBED_DIMS": "16"}
ART_ID = "art_" + "0" * 32
RANGE = ("0001-01-01", "9999-12-31")
_APPEND = {"conversation_id": SEED_CONVERSATION, "role": "user", "content": "Changed my mind", "turn_index": 0}
_INGEST = {"artifact_type": "note", "source_system": "e2e", "content": "A short note about the harbour."}

CASES = [
    BadInput("search-limt", "memory_search", {"query": "dark mode", "limt": 3}, "limt",
             mentions=("Unknown argument: limt", "Allowed: query, limit, min_confidence, mode, profile")),
    BadInput("hybrid-include-memories", "hybrid_search", {"query": "harbour", "include_memories": True},
             "include_memories", mentions=("include_memories", "include_memory", "include_history")),
    BadInput("store-with-tags", "memory_store",
             {"content": "Likes tea", "type": "fact", "confidence": 0.5, "tags": ["drinks"]}, "tags",
             mentions=("tags", "content, type, confidence, conversation_id")),
    BadInput("ingest-with-body", "artifact_ingest", {**_INGEST, "body": "x"}, "body", mentions=("artifact_type",)),
    BadInput("list-two-unknown", "memory_list", {"limt": 5, "kind": "fact"}, "kind",
             mentions=("Unknown arguments: kind", "limt", "Allowed: type, limit")),
    BadInput("append-ts-year-1-plus-1h", "history_append", {**_APPEND, "ts": "0001-01-01T00:00:00+01:00"}, "ts",
             mentions=RANGE),
    BadInput("append-ts-year-9999-minus-5h", "history_append", {**_APPEND, "ts": "9999-12-31T23:00:00-05:00"},
             "ts", mentions=RANGE),
    BadInput("ingest-ts-year-1-plus-1h", "artifact_ingest", {**_INGEST, "ts": "0001-01-01T00:00:00+01:00"}, "ts",
             mentions=RANGE),
    BadInput("search-time-range-start-year-1", "artifact_search",
             {"query": "harbour", "time_range_start": "0001-01-01T00:30:00+01:00"}, "time_range_start",
             mentions=RANGE),
    BadInput("hybrid-time-range-end-year-9999", "hybrid_search",
             {"query": "harbour", "filters": {"time_range_end": "9999-12-31T23:00:00-05:00"}}, "time_range_end",
             mentions=RANGE),
    BadInput("delete-id-newline", "memory_delete", {"memory_id": UNKNOWN_ID + "\n"}, "memory_id"),
    BadInput("artifact-get-id-newline", "artifact_get", {"artifact_id": ART_ID + "\n"}, "artifact_id"),
    BadInput("artifact-delete-id-newline", "artifact_delete", {"artifact_id": ART_ID + "\n"}, "artifact_id"),
    BadInput("reembed-id-newline", "artifact_reembed",
             {"target_embedder": "openai-compatible", "artifact_id": ART_ID + "\n"}, "artifact_id"),
    BadInput("ingest-10mb-plus-2-bytes", "artifact_ingest", {**_INGEST, "content": "é" * 5_000_001}, "content",
             mentions=("10000000 bytes", "10000002")),
]


@pytest.fixture(scope="module")
def stderr_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e-arguments") / "stderr.log"


@pytest.fixture(scope="module")
def client(stderr_log: Path) -> Iterator[BlockingClient]:
    with blocking(stdio_session(stderr_log.parent / "data", ENV, stderr_path=stderr_log)) as connected:
        connected.run(scenario.seed)
        yield connected


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_refused_by_name_and_nothing_changes(client: BlockingClient, case: BadInput) -> None:
    client.run(scenario.check_bad_input, case)


def test_a_refused_unknown_argument_is_logged_like_any_call(client: BlockingClient, stderr_log: Path) -> None:
    client.run(scenario.check_bad_input, CASES[0])
    lines = [line for line in stderr_log.read_text().splitlines() if "tool_call tool=memory_search" in line]
    assert any("status=validation_error" in line and "latency_ms=" in line for line in lines), lines


def test_the_declared_arguments_still_work(client: BlockingClient) -> None:
    found = client.run(scenario.search, "home city", limit=1, mode="lexical")
    assert found["count"] == 1


@pytest.mark.parametrize("raw, stored", [("0001-01-01T00:00:00-01:00", "0001-01-01T01:00:00Z"),
                                         ("9999-12-31T18:59:59-05:00", "9999-12-31T23:59:59Z")])
def test_the_extreme_timestamps_that_fit_in_utc_are_kept(client: BlockingClient, raw: str, stored: str) -> None:
    conversation = scenario.new_conversation("extreme-ts")
    appended = client.run(scenario.call_ok, "history_append", {"conversation_id": conversation, "role": "user",
                                                               "content": "Far away in time", "turn_index": 0,
                                                               "ts": raw})
    assert appended["ts"] == stored
