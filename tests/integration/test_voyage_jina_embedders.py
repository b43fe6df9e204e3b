"""VoyageEmbedder and JinaEmbedder against real local HTTP servers: batching, parameters, context.

Retries and error messages: test_voyage_jina_failures.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from adapters.embedders.jina import JinaEmbedder
from adapters.embedders.voyage import VoyageEmbedder
from domain.errors import ConfigurationError
from tests.support.embedding_api_cases import KEY, PROVIDERS, ApiCase, serve
from tests.support.fake_embedding_apis import context_vectors

DOCUMENT = ["Acme Corp was founded in 1999 in Berlin.", "Its revenue grew 15% last year.",
            "The company plans to open an office in Lisbon."]


@pytest.fixture(params=PROVIDERS)
def api(request: pytest.FixtureRequest) -> Iterator[ApiCase]:
    yield from serve(request.param)


@pytest.fixture
def voyage() -> Iterator[ApiCase]:
    yield from serve("voyage")


@pytest.fixture
def jina() -> Iterator[ApiCase]:
    yield from serve("jina")


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


# -- both providers ---------------------------------------------------------------------------------
def test_batches_by_count_in_order(api: ApiCase) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = api.make(batch_size=3).embed_documents(texts)
    assert vectors == [pytest.approx(api.expected(t, api.document_kind)) for t in texts]
    assert [len(body[api.input_field]) for body in api.server.bodies()] == [3, 3, 1]


def test_batches_by_token_budget(api: ApiCase) -> None:
    embedder = api.make(batch_tokens=40)
    texts = ["alpha beta gamma delta " * 3, "short one", "epsilon zeta eta theta " * 3, "x", "long " * 100]
    costs = {t: embedder.count_tokens(t) for t in texts}
    vectors = embedder.embed_documents(texts)
    assert len(vectors) == len(texts)
    batches = [body[api.input_field] for body in api.server.bodies()]
    assert [t for batch in batches for t in batch] == texts
    assert len(batches) > 1
    for batch in batches:  # within budget, or a text over it that goes alone
        assert sum(costs[t] for t in batch) <= 40 or len(batch) == 1
    for batch, following in zip(batches, batches[1:]):  # and full: the next text did not fit
        assert sum(costs[t] for t in batch) + costs[following[0]] > 40
    assert batches[-1] == ["long " * 100]


def test_document_and_query_kinds_and_parameters(api: ApiCase) -> None:
    embedder = api.make()
    document = embedder.embed_documents(["dark mode preference"])[0]
    query = embedder.embed_query("dark mode preference")
    first, second = api.server.bodies()
    assert first[api.kind_field] == api.document_kind and second[api.kind_field] == api.query_kind
    assert first[api.dimensions_field] == api.dims
    assert first["model"] == embedder.profile.model
    assert api.server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert document == pytest.approx(api.expected("dark mode preference", api.document_kind))
    assert query == pytest.approx(api.expected("dark mode preference", api.query_kind))
    assert document != pytest.approx(query, abs=1e-4) and cosine(document, query) > 0.99


def test_order_follows_index_not_position(api: ApiCase) -> None:
    api.server.script("shuffled")
    texts = ["first", "second", "third"]
    assert api.make().embed_documents(texts) == [pytest.approx(api.expected(t, api.document_kind)) for t in texts]


def test_empty_input_sends_nothing(api: ApiCase) -> None:
    assert api.make(api_key=None).embed_documents([]) == []
    assert api.server.requests == []


def test_missing_key_names_the_variable_and_sends_nothing(api: ApiCase) -> None:
    for missing in (None, ""):
        with pytest.raises(ConfigurationError) as caught:
            api.make(api_key=missing).embed_query("hi")
        assert api.key_variable in caught.value.message
    assert api.server.requests == []


def test_describe_and_local_token_counts(api: ApiCase) -> None:
    embedder = api.make()
    facts = embedder.describe()
    assert facts["provider"] == api.name and facts["dimensions"] == api.dims
    assert facts["api_key_configured"] is True and KEY not in repr(facts)
    assert facts["base_url"] == api.server.base_url
    assert api.make(api_key=None).describe()["api_key_configured"] is False
    assert 0 < embedder.count_tokens("hello world") < embedder.count_tokens("hello world " * 50)
    assert api.server.requests == []  # counting is local


@pytest.mark.parametrize("overrides", [{"batch_size": 0}, {"batch_size": 5000}, {"max_retries": 0},
                                       {"timeout": 0}, {"batch_tokens": 0}])
def test_invalid_settings_are_rejected_at_construction(api: ApiCase, overrides: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        api.make(**overrides)


# -- Voyage -----------------------------------------------------------------------------------------
def test_voyage_defaults_and_request_shape(voyage: ApiCase) -> None:
    embedder = VoyageEmbedder(api_key=KEY)
    assert (embedder.profile.provider, embedder.profile.model) == ("voyage", "voyage-3-large")
    assert (embedder.profile.dimensions, embedder.profile.max_tokens) == (1024, 32_000)
    voyage.make(dimensions=512).embed_query("hi")
    (body,) = voyage.server.bodies()
    assert body == {"input": ["hi"], "model": "voyage-3-large", "input_type": "query",
                    "output_dimension": 512, "truncation": True}


@pytest.mark.parametrize("dimensions", [0, 300, 1023, 4096])
def test_voyage_dimensions_outside_the_allowed_set(dimensions: int) -> None:
    with pytest.raises(ConfigurationError, match="VOYAGE_DIMENSIONS"):
        VoyageEmbedder(api_key=KEY, dimensions=dimensions)


def test_voyage_contextualized_sends_each_document_whole(voyage: ApiCase) -> None:
    embedder = voyage.make(model="voyage-context-3")
    other = ["Globex makes turbines.", "Its revenue grew 15% last year."]
    vectors = embedder.embed_contextualized([DOCUMENT, other])
    (body,) = voyage.server.bodies("/v1/contextualizedembeddings")
    assert body["inputs"] == [DOCUMENT, other] and body["input_type"] == "document"
    assert body["model"] == "voyage-context-3" and body["output_dimension"] == voyage.dims
    assert [len(v) for v in vectors] == [3, 2]
    assert vectors[0] == [pytest.approx(v) for v in context_vectors(DOCUMENT, "document", voyage.dims)]
    # The same chunk in two documents: two vectors, each nearer its own document.
    assert vectors[0][1] != pytest.approx(vectors[1][1], abs=1e-3)
    assert voyage.server.bodies() == []  # nothing went to the plain endpoint


def test_voyage_contextualized_one_request_per_document_with_batch_size_one(voyage: ApiCase) -> None:
    voyage.make(model="voyage-context-3", batch_size=1).embed_contextualized([DOCUMENT, ["b", "c"], ["d"]])
    assert [b["inputs"] for b in voyage.server.bodies("/v1/contextualizedembeddings")] == [
        [DOCUMENT], [["b", "c"]], [["d"]]]


def test_voyage_context_model_flat_texts_are_one_chunk_documents(voyage: ApiCase) -> None:
    embedder = voyage.make(model="voyage-context-3")
    vectors = embedder.embed_documents(["a cat", "a dog"])
    query = embedder.embed_query("which pet?")
    first, second = voyage.server.bodies("/v1/contextualizedembeddings")
    assert first["inputs"] == [["a cat"], ["a dog"]] and first["input_type"] == "document"
    assert second["inputs"] == [["which pet?"]] and second["input_type"] == "query"
    assert vectors == [pytest.approx(context_vectors([t], "document", voyage.dims)[0]) for t in ["a cat", "a dog"]]
    assert query == pytest.approx(context_vectors(["which pet?"], "query", voyage.dims)[0])


def test_voyage_long_document_goes_as_consecutive_windows(voyage: ApiCase) -> None:
    embedder = voyage.make(model="voyage-context-3", max_tokens=30)
    chunks = [f"part {i} " + "token " * 6 for i in range(5)]
    assert all(10 < embedder.count_tokens(c) <= 15 for c in chunks)  # two fit in one context
    vectors = embedder.embed_contextualized([chunks])
    (body,) = voyage.server.bodies("/v1/contextualizedembeddings")
    assert body["inputs"] == [chunks[0:2], chunks[2:4], chunks[4:5]]
    assert len(vectors) == 1 and len(vectors[0]) == 5


def test_voyage_contextualized_without_context_model_embeds_chunk_by_chunk(voyage: ApiCase) -> None:
    embedder = voyage.make()
    assert embedder.contextual is False and embedder.describe()["contextualized"] is False
    vectors = embedder.embed_contextualized([["a", "b"], [], ["c"]])
    assert [len(v) for v in vectors] == [2, 0, 1]
    assert voyage.server.bodies()[0]["input"] == ["a", "b", "c"]
    assert vectors[2][0] == pytest.approx(voyage.expected("c", "document"))


# -- Jina -------------------------------------------------------------------------------------------
def test_jina_defaults_and_request_shape(jina: ApiCase) -> None:
    embedder = JinaEmbedder(api_key=KEY)
    assert (embedder.profile.provider, embedder.profile.model) == ("jina", "jina-embeddings-v3")
    assert (embedder.profile.dimensions, embedder.profile.max_tokens) == (1024, 8192)
    jina.make().embed_documents(["hi"])
    (body,) = jina.server.bodies()
    assert body == {"model": "jina-embeddings-v3", "input": ["hi"], "task": "retrieval.passage",
                    "dimensions": jina.dims, "late_chunking": False, "normalized": True,
                    "embedding_type": "float"}


@pytest.mark.parametrize("dimensions", [0, 31, 1025])
def test_jina_dimensions_outside_the_matryoshka_range(dimensions: int) -> None:
    with pytest.raises(ConfigurationError, match="JINA_DIMENSIONS"):
        JinaEmbedder(api_key=KEY, dimensions=dimensions)


def test_jina_late_chunking_sends_a_document_in_one_request(jina: ApiCase) -> None:
    embedder = jina.make(late_chunking=True, batch_size=2)  # the batch size does not split a document
    vectors = embedder.embed_documents(DOCUMENT)
    (body,) = jina.server.bodies()
    assert body["input"] == DOCUMENT and body["late_chunking"] is True and body["task"] == "retrieval.passage"
    assert vectors == [pytest.approx(v) for v in context_vectors(DOCUMENT, "retrieval.passage", jina.dims)]
    assert embedder.describe()["late_chunking"] is True


def test_jina_queries_are_never_late_chunked(jina: ApiCase) -> None:
    jina.make(late_chunking=True).embed_query("where is Acme based?")
    (body,) = jina.server.bodies()
    assert body["late_chunking"] is False and body["task"] == "retrieval.query"


def test_jina_embed_late_chunks_whatever_the_flag(jina: ApiCase) -> None:
    embedder = jina.make()
    late = embedder.embed_late_chunks(DOCUMENT)
    plain = embedder.embed_documents(DOCUMENT)
    first, second = jina.server.bodies()
    assert first["late_chunking"] is True and second["late_chunking"] is False
    assert len(late) == len(DOCUMENT) and late[1] != pytest.approx(plain[1], abs=1e-3)
    assert embedder.embed_late_chunks([]) == []


def test_jina_late_chunking_splits_a_document_longer_than_the_model_reads(jina: ApiCase) -> None:
    embedder = jina.make(late_chunking=True, max_tokens=30)
    chunks = [f"part {i} " + "token " * 6 for i in range(5)]
    assert all(10 < embedder.count_tokens(c) <= 15 for c in chunks)
    assert len(embedder.embed_documents(chunks)) == 5
    assert [b["input"] for b in jina.server.bodies()] == [chunks[0:2], chunks[2:4], chunks[4:5]]
