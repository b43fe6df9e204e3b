"""The opt-in rerank model over MCP stdio (issue 43.4): a real server process (SQLite + embedded Chroma, the
local embedder) with MEMTROVE_RERANKER=cohere pointing at a local stand-in for Cohere's API.

When the stand-in answers, memory_search, hybrid_search and artifact_search come back in the order of its
scores. When it refuses the key, times out or answers garbage, each search still answers, in the learned
stage's order (the order the same store gives with MEMTROVE_RERANKER off), with a top-level ``warnings``
entry naming the API and what went wrong, in the structured result and its text. A bad MEMTROVE_RERANKER
setting stops the start with one line naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, run_cli, stdio_session
from tests.support.rerank_standins import CohereStandIn, preferring

pytestmark = pytest.mark.slow

KEY = "co-e2e-secret-key-42"
MEMORIES = ["The CI runners are on Hetzner machines.",
            "The heronpond staging database is restored every Sunday night.",
            "Alice prefers tabs over spaces, in the CI runners' configuration too.",
            "The release train leaves every second Thursday.",
            "Deploys need a green build on main before the CI runners pick them up."]
DOCUMENTS = {"runners": "Our CI runners run on Hetzner machines in Falkenstein. Each runner has 8 cores.",
             "editors": "Editor settings: Alice prefers tabs; the formatter the CI runners run keeps them in Go files.",
             "release": "The release train leaves every second Thursday, after the CI runners are green."}
QUERY = "where do the CI runners run"
# The stand-in puts what holds it first: an order the search's own signals do not give (each record holding it
# also holds words of the query, so that it is among the candidates a search asks the model to order).
FAVOURED = "Alice"


@dataclass
class Served:
    client: BlockingClient
    api: CohereStandIn
    learned: dict[str, list[dict[str, Any]]]  # each search's results on the same store, MEMTROVE_RERANKER off


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return {**result.structured_content, "_text": result.content[0].text}


SEARCHES: dict[str, dict[str, Any]] = {
    "memory_search": {"query": QUERY, "limit": 5},
    "hybrid_search": {"query": QUERY, "limit": 8, "include_memory": True},
    "artifact_search": {"query": QUERY, "limit": 3},
}


def order(found: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in found["results"]]


def text_of(hit: dict[str, Any]) -> str:
    return hit.get("content") or hit.get("snippet") or ""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The store written and searched by a server with MEMTROVE_RERANKER off (the learned orders), then
    served by one whose rerank model is the stand-in."""
    root = tmp_path_factory.mktemp("reranker")
    with blocking(stdio_session(root / "data", {}, stderr_path=root / "off.log")) as client:
        for content in MEMORIES:
            call(client, "memory_store", content=content, type="fact", confidence=0.9)
        for name, content in DOCUMENTS.items():
            call(client, "artifact_ingest", artifact_type="doc", source_system="manual", title=name,
                 content=content, source_id=name)
        learned = {tool: call(client, tool, **arguments)["results"] for tool, arguments in SEARCHES.items()}
    with CohereStandIn(api_key=KEY, slow_seconds=6.0, score_of=preferring(FAVOURED)) as api:
        env = {"MEMTROVE_RERANKER": "cohere", "MEMTROVE_RERANKER_URL": api.base_url,
               "MEMTROVE_RERANKER_API_KEY": KEY, "MEMTROVE_RERANKER_TIMEOUT": "1"}
        with blocking(stdio_session(root / "data", env, stderr_path=root / "cohere.log")) as client:
            yield Served(client, api, learned)


def test_the_learned_order_does_not_put_the_favoured_record_first(served: Served) -> None:
    """Else a reordering by the stand-in could not be told from the search's own order."""
    for tool, results in served.learned.items():
        assert results and FAVOURED not in text_of(results[0]), (tool, results)


@pytest.mark.parametrize("tool", sorted(SEARCHES))
def test_a_search_comes_back_in_the_rerank_models_order(served: Served, tool: str) -> None:
    asked = len(served.api.requests)
    found = call(served.client, tool, **SEARCHES[tool])
    assert found["results"] and "warnings" not in found, found
    assert FAVOURED in text_of(found["results"][0]), [text_of(h) for h in found["results"]]
    assert "Warning" not in found["_text"]
    (request,) = served.api.requests[asked:]
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["query"] == QUERY and request.body["model"] == "rerank-v3.5"
    assert 2 <= len(request.body["documents"]) <= 50
    assert any(FAVOURED in d for d in request.body["documents"])


FAILURES = [(401, "the API key was refused (HTTP 401: invalid api token '***'); check MEMTROVE_RERANKER_API_KEY"),
            ("slow", "no answer within 1s (MEMTROVE_RERANKER_TIMEOUT)"),
            ("malformed", "the answer (HTTP 200) is not JSON"),
            ("too_few", "the answer scores"),
            (500, "the server failed (HTTP 500: scripted failure 500)")]


@pytest.mark.parametrize("outcome, said", FAILURES)
@pytest.mark.parametrize("tool", sorted(SEARCHES))
def test_a_failing_rerank_model_leaves_the_order_to_the_learned_stage_with_a_warning(
        served: Served, tool: str, outcome: object, said: str) -> None:
    if outcome == 401:
        served.api.api_key = "another-key"  # the server's key is refused: the stand-in echoes it back
    else:
        served.api.script(outcome)  # type: ignore[arg-type]
    try:
        found = call(served.client, tool, **SEARCHES[tool])
    finally:
        served.api.api_key = KEY
    assert order(found) == [hit["id"] for hit in served.learned[tool]], found
    (warning,) = found["warnings"]
    assert "Cohere reranker (cohere/rerank-v3.5): " + said in warning, warning
    assert warning.endswith("the learned rerank stage ordered the results"), warning
    assert KEY not in warning and "another-key" not in warning
    assert warning in found["_text"]


@pytest.mark.parametrize("values, variable, value", [
    ({"MEMTROVE_RERANKER": "magic"}, "MEMTROVE_RERANKER", "magic"),
    ({"MEMTROVE_RERANKER": "cohere"}, "MEMTROVE_RERANKER", "cohere"),
    ({"MEMTROVE_RERANKER": "openai-compatible"}, "MEMTROVE_RERANKER_URL", "openai-compatible"),
    ({"MEMTROVE_RERANKER_TIMEOUT": "0"}, "MEMTROVE_RERANKER_TIMEOUT", "0"),
])
def test_a_bad_reranker_setting_stops_the_start_with_one_line_naming_it(tmp_path: Path, values: dict[str, str],
                                                                       variable: str, value: str) -> None:
    env = {**values, "COHERE_API_KEY": ""}
    done = run_cli(["serve"], tmp_path / "data", env, timeout=30.0)
    assert done.returncode != 0 and done.stdout == "", done
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert variable in lines[0] and value in lines[0], lines[0]
