"""A lax tool refuses arguments it does not declare, by name, before its body runs."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from entrypoints.mcp import render
from entrypoints.mcp.tooling import lax_tool

calls: list[dict[str, Any]] = []


def memory_search(query: Annotated[str, Field(description="Search query")], limit: int = 5,
                  mode: str = "hybrid") -> CallToolResult:
    calls.append({"query": query, "limit": limit, "mode": mode})
    return render.ok({"query": query, "limit": limit}, "ran")


TOOL = lax_tool(memory_search, "Search.")


def run(arguments: dict[str, Any]) -> CallToolResult:
    async def call() -> CallToolResult:
        return await TOOL.run(arguments, context=None, convert_result=True)  # type: ignore[arg-type]
    return anyio.run(call)


def test_declared_arguments_reach_the_body_unparsed() -> None:
    calls.clear()
    result = run({"query": "tea", "limit": "3"})
    assert not result.is_error and calls == [{"query": "tea", "limit": "3", "mode": "hybrid"}]


def test_a_misspelled_argument_is_a_tool_error_naming_it_and_the_allowed_ones() -> None:
    calls.clear()
    result = run({"query": "tea", "limt": 3})
    assert result.is_error and calls == []
    error = result.structured_content["error"]
    assert error == {"type": "validation_error", "field": "limt",
                     "message": "Unknown argument: limt (did you mean limit?). Allowed: query, limit, mode"}
    assert isinstance(result.content[0], TextContent) and result.content[0].text == error["message"]


def test_every_unknown_argument_is_named() -> None:
    result = run({"query": "tea", "include_memories": True, "zzz": 1})
    error = result.structured_content["error"]
    assert error["field"] == "include_memories"
    assert error["message"].startswith("Unknown arguments: include_memories, zzz. Allowed: query, limit, mode")


def test_the_published_schema_is_the_typed_one() -> None:
    assert TOOL.parameters["properties"]["query"]["type"] == "string"
    assert TOOL.parameters["required"] == ["query"]


def ingest(content: str, source_id: str | None = None, visible_to: list[str] | None = None,
           filters: dict[str, Any] | None = None, retention_days: int | None = None) -> CallToolResult:
    calls.append({"content": content, "source_id": source_id, "visible_to": visible_to, "filters": filters,
                  "retention_days": retention_days})
    return render.ok({}, "ran")


INGEST = lax_tool(ingest, "Ingest.")
JSON_LOOKING = ['{"k": "v"}', "[1]", "{}", '"x"', "1e5", "null", "true", "[1,2]", " [1] ", "-0"]


def run_ingest(arguments: dict[str, Any]) -> dict[str, Any]:
    calls.clear()

    async def call() -> CallToolResult:
        return await INGEST.run(arguments, context=None, convert_result=True)  # type: ignore[arg-type]
    assert not anyio.run(call).is_error
    return calls[0]


def test_a_string_that_looks_like_json_reaches_a_string_parameter_as_sent() -> None:
    for text in JSON_LOOKING:
        got = run_ingest({"content": text, "source_id": text})
        assert (got["content"], got["source_id"]) == (text, text), text


def test_a_list_or_object_sent_as_json_text_is_still_read_for_parameters_that_take_no_string() -> None:
    got = run_ingest({"content": "c", "visible_to": '["alice"]', "filters": '{"a": 1}'})
    assert got["visible_to"] == ["alice"] and got["filters"] == {"a": 1}
    # A plain word or a number in a string is not JSON of a list: it arrives as sent, for the checks to refuse.
    got = run_ingest({"content": "c", "visible_to": "alice", "retention_days": "5"})
    assert got["visible_to"] == "alice" and got["retention_days"] == "5"
    got = run_ingest({"content": "c", "visible_to": "null", "filters": "null"})  # not left out: refused as text
    assert got["visible_to"] == "null" and got["filters"] == "null"
