"""VoyageEmbedder and JinaEmbedder when their APIs fail: retries, and every error message.

Each test runs once per provider against its real local fake server (tests/support).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger

from domain.errors import ConfigurationError, EmbeddingError, ValidationError
from tests.support.embedding_api_cases import KEY, PROVIDERS, ApiCase, serve


@pytest.fixture(params=PROVIDERS)
def api(request: pytest.FixtureRequest) -> Iterator[ApiCase]:
    yield from serve(request.param)


@pytest.fixture
def sleeps(api: ApiCase) -> list[float]:
    return api.sleeps


@pytest.fixture
def jina() -> Iterator[ApiCase]:
    yield from serve("jina")


def test_rate_limited_twice_then_success(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script(429, 429)
    assert api.make().embed_query("hi") == pytest.approx(api.expected("hi", api.query_kind))
    assert sleeps == [1, 2] and len(api.server.bodies()) == 3


def test_rate_limit_exhausted(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script(429, 429, 429)
    with pytest.raises(EmbeddingError) as caught:
        api.make().embed_query("hi")
    assert caught.value.message == (
        f"{api.display} API: failed after 3 attempts due to rate limiting "
        "(HTTP 429: You have exceeded your rate limit. Please slow down.). Try again later.")
    assert sleeps == [1, 2] and len(api.server.bodies()) == 3


def test_attempts_follow_max_retries(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script(503, 503, 503, 503, 503)
    with pytest.raises(EmbeddingError, match=f"^{api.display} service unavailable after 5 attempts"):
        api.make(max_retries=5).embed_query("hi")
    assert sleeps == [1, 2, 4, 8]


def test_server_errors_exhausted(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script(500, 500, 500)
    with pytest.raises(EmbeddingError) as caught:
        api.make().embed_query("hi")
    assert caught.value.message == (
        f"{api.display} service unavailable after 3 attempts (HTTP 500: Internal server error.).")
    assert len(api.server.bodies()) == 3


def test_a_failure_mid_batching_is_retried(api: ApiCase, sleeps: list[float]) -> None:
    api.server.fail_on(2, 502)
    texts = [f"t{i}" for i in range(5)]
    vectors = api.make(batch_size=2).embed_documents(texts)
    assert vectors == [pytest.approx(api.expected(t, api.document_kind)) for t in texts]
    assert len(api.server.bodies()) == 4 and sleeps == [1]


def test_timeouts_exhausted(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script("slow", "slow", "slow")
    with pytest.raises(EmbeddingError) as caught:
        api.make(timeout=0.5).embed_query("hi")
    assert caught.value.message == f"{api.display} API request failed after 3 timeouts of 0.5s each."
    assert sleeps == [1, 2] and len(api.server.bodies()) == 3


def test_one_timeout_then_success(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script("slow")
    assert len(api.make(timeout=0.5).embed_query("hi")) == api.dims
    assert sleeps == [1]


def test_refused_key_is_not_retried_and_never_shown(api: ApiCase, sleeps: list[float]) -> None:
    wrong = "sk-wrong-key-456"
    with pytest.raises(ConfigurationError) as caught:  # the fake's detail echoes the key it got
        api.make(api_key=wrong).embed_query("hi")
    message = caught.value.message
    assert message.startswith(f"{api.display} API refused the API key (HTTP 401: ")
    assert message.endswith(f"Check {api.key_variable}.")
    assert wrong not in message and wrong not in str(caught.value) and KEY not in message
    assert len(api.server.bodies()) == 1 and sleeps == []


def test_bad_request_is_a_validation_error_without_retry(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script(400)
    with pytest.raises(ValidationError) as caught:
        api.make().embed_query("hi")
    assert caught.value.field == "content"
    assert caught.value.message == f"Invalid text for embedding: {api.display} API said: Bad request."
    assert len(api.server.bodies()) == 1 and sleeps == []


def test_other_client_errors_are_not_retried(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script(404)
    with pytest.raises(EmbeddingError) as caught:
        api.make().embed_query("hi")
    assert caught.value.message == f"{api.display} API request failed with status 404: Not found."
    assert len(api.server.bodies()) == 1 and sleeps == []


def test_wrong_number_of_embeddings(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script("wrong_count")
    with pytest.raises(EmbeddingError) as caught:
        api.make().embed_documents(["a", "b", "c"])
    assert caught.value.message == f"{api.display} API returned 2 embeddings for 3 texts"


def test_wrong_dimensions(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script("wrong_dimensions")
    variable = api.key_variable.replace("API_KEY", "DIMENSIONS")
    with pytest.raises(EmbeddingError, match=f"returned {api.dims + 1} dimensions; expected {api.dims}. "
                                             f"Check {variable}."):
        api.make().embed_query("hi")


def test_malformed_json(api: ApiCase, sleeps: list[float]) -> None:
    api.server.script("malformed")
    with pytest.raises(EmbeddingError) as caught:
        api.make().embed_query("hi")
    assert caught.value.message == f"{api.display} API returned an unusable response (status 200, not JSON)"
    assert sleeps == []


def test_jina_validation_detail_lists_are_read(jina: ApiCase) -> None:
    # Another Jina model: the adapter leaves its dimensions to the API, which refuses 16.
    with pytest.raises(EmbeddingError) as caught:
        jina.make(model="jina-embeddings-v2-base-en", dimensions=16).embed_query("hi")
    assert caught.value.message == "Jina API request failed with status 422: dimensions must be 32 to 1024"
    assert len(jina.server.bodies()) == 1 and jina.sleeps == []


def test_contextual_requests_are_retried_and_checked_the_same_way(api: ApiCase, sleeps: list[float]) -> None:
    chunks = ["Acme grew.", "It grew 15%."]
    if api.name == "voyage":
        embed = lambda: api.make(model="voyage-context-3").embed_contextualized([chunks])  # noqa: E731
    else:
        embed = lambda: api.make(late_chunking=True).embed_documents(chunks)  # noqa: E731
    api.server.script(429, "wrong_count")
    with pytest.raises(EmbeddingError, match="returned 1 embeddings for 2 texts"):
        embed()
    assert sleeps == [1]


def test_connection_refused(api: ApiCase, sleeps: list[float]) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EmbeddingError) as caught:
        api.make(base_url=base_url).embed_query("hi")
    assert caught.value.message == f"Cannot connect to {api.display} API at {base_url} (after 3 attempts)"
    assert sleeps == [1, 2]


def test_retries_are_logged_at_warning_without_text(api: ApiCase, sleeps: list[float]) -> None:
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="WARNING")
    try:
        api.server.script(429, 500)
        api.make().embed_query("very private text")
    finally:
        logger.remove(sink)
    assert [(r["extra"]["attempt"], r["extra"]["backoff_ms"], r["extra"]["provider"]) for r in records] == [
        (1, 1000, api.name), (2, 2000, api.name)]
    assert all("private" not in r["message"] and "private" not in str(r["extra"]) for r in records)
