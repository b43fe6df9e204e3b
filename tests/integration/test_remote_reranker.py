"""The rerank API adapters (adapters/rerank/remote*.py) against real local servers standing in for each API.

Every case runs once per API: Cohere, Jina, Voyage, and the OpenAI-style rerank of vLLM, llama.cpp and
text-embeddings-inference (tests/support/rerank_standins.py).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from loguru import logger

from adapters.rerank.remote import MAX_DOCUMENTS, HttpTextReranker
from adapters.rerank.remote_providers import (
    CohereTextReranker,
    JinaTextReranker,
    OpenAICompatibleTextReranker,
    VoyageTextReranker,
)
from domain.ports.reranking import RerankerError
from tests.support.rerank_standins import (
    CohereStandIn,
    JinaStandIn,
    LlamaCppStandIn,
    RerankStandIn,
    TeiStandIn,
    VllmStandIn,
    VoyageStandIn,
    preferring,
)

KEY = "rk-secret-0123456789"
DOCUMENTS = ["Cats sleep most of the day.", "The CI runners are on Hetzner machines.", "Staging uses heronpond."]
QUERY = "where do the CI runners run"


@dataclass
class Case:
    server: RerankStandIn
    adapter: type[HttpTextReranker]
    key: str | None
    sleeps: list[float] = field(default_factory=list)

    def make(self, timeout: float = 5.0, key: str | None = None, **kwargs: object) -> HttpTextReranker:
        return self.adapter(api_key=key or self.key, base_url=self.server.base_url, timeout=timeout,
                            sleep=self.sleeps.append, **kwargs)  # type: ignore[arg-type]


CASES: dict[str, tuple[Callable[..., RerankStandIn], type[HttpTextReranker], str | None]] = {
    "cohere": (CohereStandIn, CohereTextReranker, KEY), "jina": (JinaStandIn, JinaTextReranker, KEY),
    "voyage": (VoyageStandIn, VoyageTextReranker, KEY), "vllm": (VllmStandIn, OpenAICompatibleTextReranker, None),
    "llama.cpp": (LlamaCppStandIn, OpenAICompatibleTextReranker, None),
    "tei": (TeiStandIn, OpenAICompatibleTextReranker, None),
}


@pytest.fixture(params=sorted(CASES))
def api(request: pytest.FixtureRequest) -> Iterator[Case]:
    server_type, adapter, key = CASES[request.param]
    with server_type(api_key=key, score_of=preferring("Hetzner", "heronpond")) as server:
        yield Case(server, adapter, key)


def test_the_scores_follow_the_models_answer_in_the_documents_order(api: Case) -> None:
    scores = api.make().rerank(QUERY, DOCUMENTS)
    # The APIs answer best first; the adapter gives the scores back in the documents' order.
    assert scores == pytest.approx([0.01, 0.95, 0.85])
    assert sorted(range(3), key=lambda i: -scores[i]) == [1, 2, 0]
    (request,) = api.server.requests
    assert request.path == f"{api.server.prefix}/rerank"
    assert request.headers.get("authorization") == (f"Bearer {KEY}" if api.key else None)
    body = request.body
    assert body["query"] == QUERY
    assert body.get("texts" if isinstance(api.server, TeiStandIn) else "documents") == DOCUMENTS


@pytest.mark.parametrize("provider, model, count", [("cohere", "rerank-v3.5", "top_n"),
                                                    ("jina", "jina-reranker-v2-base-multilingual", "top_n"),
                                                    ("voyage", "rerank-2.5", "top_k")])
def test_each_hosted_api_gets_its_own_body(provider: str, model: str, count: str) -> None:
    server_type, adapter, _ = CASES[provider]
    with server_type(api_key=KEY) as server:
        reranker = adapter(api_key=KEY, base_url=server.base_url)
        assert reranker.name == f"{provider}/{model}"
        assert len(reranker.rerank(QUERY, DOCUMENTS)) == 3
        other = adapter(api_key=KEY, base_url=server.base_url, model="custom-model")
        other.rerank(QUERY, DOCUMENTS)
    first, second = server.bodies()
    assert (first["model"], first[count], second["model"]) == (model, 3, "custom-model")
    if provider == "voyage":
        assert first["truncation"] is True and "top_n" not in first
    if provider != "cohere":
        assert first["return_documents"] is False


def test_a_local_server_gets_a_model_only_when_one_is_named() -> None:
    with VllmStandIn(api_key=KEY) as server:
        OpenAICompatibleTextReranker(api_key=KEY, base_url=server.base_url).rerank(QUERY, DOCUMENTS)
        named = OpenAICompatibleTextReranker(api_key=KEY, base_url=server.base_url, model="BAAI/bge-reranker-v2-m3")
        named.rerank(QUERY, DOCUMENTS)
    first, second = server.bodies()
    assert "model" not in first and second["model"] == "BAAI/bge-reranker-v2-m3"
    assert named.name == "openai-compatible/BAAI/bge-reranker-v2-m3"


def test_long_documents_are_cut_before_they_are_sent(api: Case) -> None:
    long = "word " * 3_000  # 15,000 characters, 3,000 words: past what TEI's model reads unless truncated
    assert len(api.make().rerank(QUERY * 200, [long, "short"])) == 2
    body = api.server.bodies()[0]
    sent = body.get("texts") or body.get("documents")
    assert len(sent[0]) <= api.adapter.max_document_chars and sent[1] == "short"
    assert len(body["query"]) <= 2_000
    if isinstance(api.server, TeiStandIn):
        assert body["truncate"] is True  # TEI refuses (422) a text past what its model reads unless asked to cut it


FAILURES = [
    (401, "the API key was refused (HTTP 401"), (403, "the API key was refused (HTTP 403"),
    (429, "rate limited (HTTP 429"), (500, "the server failed (HTTP 500"), (503, "the server failed (HTTP 503"),
    (400, "the request was refused (HTTP 400"),
    ("malformed", "the answer (HTTP 200) is not JSON"), ("no_results", "the answer holds no list of results"),
    ("too_few", "the answer scores 2 of the 3 documents sent"),
    ("bad_index", "the answer scores a document at index 3 of 3 sent"),
    ("twice", "the answer scores the document at index 1 twice"),
    ("nan", "the answer's score for document 1 is nan, not a finite number"),
]


@pytest.mark.parametrize("outcome, said", FAILURES)
def test_every_failure_is_one_line_naming_the_api_and_what_went_wrong(api: Case, outcome: object, said: str) -> None:
    api.server.script(outcome)  # type: ignore[arg-type]
    reranker = api.make()
    with pytest.raises(RerankerError) as caught:
        reranker.rerank(QUERY, DOCUMENTS)
    message = str(caught.value)
    assert message.startswith(f"{reranker.display} reranker ({reranker.name}): "), message
    assert said in message and "\n" not in message and KEY not in message, message
    assert len(api.server.requests) == 1 and api.sleeps == []  # nothing of these is retried


def test_a_failure_is_logged_once_without_the_key(api: Case) -> None:
    """Searches that show no warnings (project_search, search_code...) fall back silently: the log says it."""
    records: list[Any] = []
    sink = logger.add(lambda message: records.append(message.record), level="WARNING")
    api.server.script(401)
    try:
        with pytest.raises(RerankerError):
            api.make().rerank(QUERY, DOCUMENTS)
    finally:
        logger.remove(sink)
    (record,) = [r for r in records if r["message"].startswith("rerank_failed")]
    assert f"provider={api.adapter.provider} " in record["message"] and "documents=3 " in record["message"]
    assert "HTTP 401" in record["message"] and KEY not in record["message"]


def test_a_refused_key_is_never_shown(api: Case) -> None:
    if api.key is None:
        api.server.api_key = KEY  # a local server started with --api-key
    wrong = "rk-wrong-key-987654321"
    with pytest.raises(RerankerError) as caught:
        api.make(key=wrong).rerank(QUERY, DOCUMENTS)
    message = str(caught.value)
    assert "the API key was refused (HTTP 401: invalid api token '***')" in message, message
    assert wrong not in message and "check MEMTROVE_RERANKER_API_KEY" in message


def test_a_server_slower_than_the_timeout(api: Case) -> None:
    api.server.script("slow")
    with pytest.raises(RerankerError) as caught:
        api.make(timeout=0.3).rerank(QUERY, DOCUMENTS)
    assert str(caught.value).endswith("no answer within 0.3s (MEMTROVE_RERANKER_TIMEOUT)"), caught.value


def test_a_server_sending_its_answer_a_byte_at_a_time(api: Case) -> None:
    """httpx's timeout bounds each wait for a byte; the whole answer must still come within the timeout."""
    api.server.script("trickle")
    with pytest.raises(RerankerError) as caught:
        api.make(timeout=0.5).rerank(QUERY, DOCUMENTS)
    assert str(caught.value).endswith("no answer within 0.5s (MEMTROVE_RERANKER_TIMEOUT)"), caught.value


def test_nothing_listening(api: Case) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    reranker = api.adapter(api_key=api.key, base_url=f"http://user:pw@127.0.0.1:{port}/v1", timeout=2.0)
    with pytest.raises(RerankerError) as caught:
        reranker.rerank(QUERY, DOCUMENTS)
    assert f"cannot connect to http://127.0.0.1:{port}/v1/rerank (connection refused)" in str(caught.value)
    assert "pw" not in str(caught.value)


def test_a_short_rate_limit_pause_is_waited_for_once(api: Case) -> None:
    api.server.script("retry_after:0.2")
    assert len(api.make().rerank(QUERY, DOCUMENTS)) == 3
    assert api.sleeps == [0.2] and len(api.server.requests) == 2


def test_a_second_rate_limit_is_not_waited_for(api: Case) -> None:
    api.server.script("retry_after:0", "retry_after:0")
    with pytest.raises(RerankerError, match=r"rate limited \(HTTP 429"):
        api.make().rerank(QUERY, DOCUMENTS)
    assert api.sleeps == [0.0] and len(api.server.requests) == 2


@pytest.mark.parametrize("retry_after", ["30", "Wed, 21 Oct 2026 07:28:00 GMT"])
def test_a_long_or_dated_rate_limit_pause_is_not_waited_for(api: Case, retry_after: str) -> None:
    api.server.script(f"retry_after:{retry_after}")
    with pytest.raises(RerankerError, match=r"rate limited"):
        api.make().rerank(QUERY, DOCUMENTS)
    assert api.sleeps == [] and len(api.server.requests) == 1


def test_no_documents_asks_nothing_and_too_many_are_refused(api: Case) -> None:
    reranker = api.make()
    assert reranker.rerank(QUERY, []) == []
    with pytest.raises(RerankerError, match=f"asked to rerank {MAX_DOCUMENTS + 1} documents; at most {MAX_DOCUMENTS}"):
        reranker.rerank(QUERY, ["doc"] * (MAX_DOCUMENTS + 1))
    assert api.server.requests == []
    assert len(reranker.rerank(QUERY, [f"doc {i}" for i in range(MAX_DOCUMENTS)])) == MAX_DOCUMENTS
