"""OpenAIEmbedder against a real local HTTP server: batching, retries and every error message."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger

from adapters.embedders.openai import OpenAIEmbedder
from domain.errors import ConfigurationError, EmbeddingError, ValidationError
from tests.support.fake_openai import FakeOpenAIServer, fake_embedding

KEY = "sk-test-secret-123"
DIMS = 8


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=KEY, slow_seconds=2.0) as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make(server: FakeOpenAIServer, sleeps: list[float], **overrides: Any) -> OpenAIEmbedder:
    options: dict[str, Any] = dict(
        api_key=KEY, model="text-embedding-3-small", dimensions=DIMS,
        base_url=server.base_url, timeout=2.0, sleep=sleeps.append,
    )
    options.update(overrides)
    return OpenAIEmbedder(**options)


def test_embeds_in_order_in_batches_of_at_most_100(server, sleeps):
    texts = [f"text number {i}" for i in range(250)]
    vectors = make(server, sleeps).embed_documents(texts)
    assert vectors == [pytest.approx(fake_embedding(t, DIMS)) for t in texts]
    assert [len(r.body["input"]) for r in server.embedding_requests] == [100, 100, 50]
    assert sleeps == []


def test_order_follows_index_not_position_in_the_response(server, sleeps):
    server.script("shuffled")
    texts = ["first", "second", "third"]
    vectors = make(server, sleeps).embed_documents(texts)
    assert vectors == [pytest.approx(fake_embedding(t, DIMS)) for t in texts]


def test_smaller_batch_size_is_honoured(server, sleeps):
    make(server, sleeps, batch_size=2).embed_documents(["a", "b", "c"])
    assert [r.body["input"] for r in server.embedding_requests] == [["a", "b"], ["c"]]


def test_sends_model_dimensions_float_format_and_bearer_key(server, sleeps):
    vector = make(server, sleeps).embed_query("hello")
    (request,) = server.embedding_requests
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["dimensions"] == DIMS
    assert request.body["encoding_format"] == "float"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert vector == pytest.approx(fake_embedding("hello", DIMS))


def test_send_dimensions_false_leaves_the_parameter_out(sleeps):
    with FakeOpenAIServer(default_dimensions=DIMS) as fake:
        make(fake, sleeps, send_dimensions=False).embed_query("hello")
        assert "dimensions" not in fake.embedding_requests[0].body


def test_two_rate_limits_then_success_backs_off_1_then_2_seconds(server, sleeps):
    server.script(429, 429)
    assert len(make(server, sleeps).embed_query("hi")) == DIMS
    assert sleeps == [1, 2]
    assert len(server.embedding_requests) == 3


def test_rate_limit_exhausted(server, sleeps):
    server.script(429, 429, 429)
    with pytest.raises(EmbeddingError) as caught:
        make(server, sleeps).embed_query("hi")
    assert caught.value.message == "Failed after 3 attempts due to rate limiting. Try again later."
    assert sleeps == [1, 2]
    assert len(server.embedding_requests) == 3


def test_attempt_count_in_message_follows_max_retries(server, sleeps):
    server.script(429, 429, 429, 429, 429)
    with pytest.raises(EmbeddingError, match="^Failed after 5 attempts due to rate limiting"):
        make(server, sleeps, max_retries=5).embed_query("hi")
    assert sleeps == [1, 2, 4, 8]


def test_server_errors_exhausted(server, sleeps):
    server.script(500, 500, 500)
    with pytest.raises(EmbeddingError) as caught:
        make(server, sleeps).embed_query("hi")
    assert caught.value.message == "OpenAI service unavailable after 3 attempts."
    assert len(server.embedding_requests) == 3


def test_one_503_then_success(server, sleeps):
    server.script(503)
    assert len(make(server, sleeps).embed_query("hi")) == DIMS
    assert sleeps == [1]


def test_failure_on_the_nth_request_is_retried_mid_batching(server, sleeps):
    server.fail_on(2, 502)
    texts = [f"t{i}" for i in range(5)]
    vectors = make(server, sleeps, batch_size=2).embed_documents(texts)
    assert vectors == [pytest.approx(fake_embedding(t, DIMS)) for t in texts]
    assert len(server.embedding_requests) == 4 and sleeps == [1]


def test_timeouts_exhausted(server, sleeps):
    server.script("slow", "slow", "slow")
    with pytest.raises(EmbeddingError) as caught:
        make(server, sleeps, timeout=0.5).embed_query("hi")
    assert caught.value.message == "Request failed after 3 timeouts."
    assert sleeps == [1, 2]
    assert len(server.embedding_requests) == 3


def test_invalid_key_is_a_configuration_error_without_retry(server, sleeps):
    with pytest.raises(ConfigurationError) as caught:
        make(server, sleeps, api_key="sk-wrong").embed_query("hi")
    assert caught.value.message == (
        "OpenAI API key is invalid or missing. Check OPENAI_API_KEY environment variable."
    )
    assert len(server.embedding_requests) == 1 and sleeps == []


def test_bad_request_is_a_validation_error_without_retry(server, sleeps):
    server.script(400)
    with pytest.raises(ValidationError) as caught:
        make(server, sleeps).embed_query("hi")
    assert caught.value.field == "content"
    assert caught.value.message.startswith("Invalid text for embedding: ")
    assert "'$.input' is invalid" in caught.value.message
    assert len(server.embedding_requests) == 1 and sleeps == []


def test_other_client_errors_are_not_retried(server, sleeps):
    server.script(404)
    with pytest.raises(EmbeddingError, match="status 404"):
        make(server, sleeps).embed_query("hi")
    assert len(server.embedding_requests) == 1 and sleeps == []


@pytest.mark.parametrize("missing", [None, ""])
def test_missing_key_fails_on_first_embed_without_any_request(server, sleeps, missing):
    embedder = make(server, sleeps, api_key=missing)  # constructing is fine: no network yet
    with pytest.raises(ConfigurationError) as caught:
        embedder.embed_documents(["hi"])
    assert caught.value.message == "OPENAI_API_KEY not configured"
    assert server.requests == []


def test_openai_compatible_server_needs_no_key(sleeps):
    with FakeOpenAIServer(default_dimensions=DIMS) as fake:
        embedder = make(fake, sleeps, api_key=None, provider="openai-compatible", send_dimensions=False)
        assert embedder.embed_query("hi") == pytest.approx(fake_embedding("hi", DIMS))
        assert embedder.profile.provider == "openai-compatible"
        assert fake.embedding_requests[0].headers["authorization"] == "Bearer not-needed"


def test_wrong_dimensions_in_response_is_an_embedding_error(server, sleeps):
    server.script("wrong_dimensions")
    with pytest.raises(EmbeddingError, match=f"returned {DIMS + 1} dimensions; expected {DIMS}"):
        make(server, sleeps).embed_query("hi")


def test_connection_refused_is_an_embedding_error(sleeps):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    embedder = OpenAIEmbedder(api_key=KEY, dimensions=DIMS, base_url=base_url, timeout=2.0, sleep=sleeps.append)
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed_query("hi")
    assert caught.value.message == f"Cannot connect to OpenAI API at {base_url}"
    assert sleeps == [1, 2]


def test_retries_are_logged_at_warning_without_text(server, sleeps):
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="WARNING")
    try:
        server.script(429, 500)
        make(server, sleeps).embed_query("very private text")
    finally:
        logger.remove(sink)
    assert [r["level"].name for r in records] == ["WARNING", "WARNING"]
    assert [(r["extra"]["attempt"], r["extra"]["backoff_ms"]) for r in records] == [(1, 1000), (2, 2000)]
    assert all("private" not in r["message"] and "private" not in str(r["extra"]) for r in records)


def test_describe_never_contains_the_key(server, sleeps):
    embedder = make(server, sleeps)
    facts = embedder.describe()
    assert facts == {
        "provider": "openai", "model": "text-embedding-3-small", "dimensions": DIMS,
        "base_url": server.base_url, "api_key_configured": True, "max_tokens": 8191,
    }
    assert KEY not in repr(facts)
    assert make(server, sleeps, api_key=None).describe()["api_key_configured"] is False


def test_count_tokens_uses_cl100k(server, sleeps):
    embedder = make(server, sleeps)
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens("") == 0
    assert server.requests == []  # counting is local


@pytest.mark.parametrize(
    "overrides", [{"batch_size": 101}, {"batch_size": 0}, {"max_retries": 0}, {"provider": "cohere"}]
)
def test_invalid_settings_are_rejected_at_construction(server, sleeps, overrides):
    with pytest.raises(ConfigurationError):
        make(server, sleeps, **overrides)
