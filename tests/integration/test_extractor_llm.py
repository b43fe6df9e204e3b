"""The LLM extractor against a real local HTTP server speaking OpenAI's chat completions API: the
extractor contract, the request it sends (model, JSON schema, numbered passages with speakers), and
each error the endpoint can give named in what it raises."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.graph.extraction import Passage
from plugins.extractors.llm import BATCH, LlmExtractor
from plugins.manager import collect, plugin_manager
from plugins.testing_extractors import ExtractorContract
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(slow_seconds=3.0, api_key="sk-test") as running:
        yield running


def make(server: FakeOpenAIServer, timeout: float = 30.0, key: str = "sk-test") -> LlmExtractor:
    return LlmExtractor("gpt-test", server.base_url, key, timeout)


class TestLlmExtractor(ExtractorContract):
    @pytest.fixture
    def extractor(self, server: FakeOpenAIServer) -> LlmExtractor:
        return make(server)


def test_the_request_is_structured_output_over_numbered_passages(server: FakeOpenAIServer) -> None:
    before = len(server.requests)
    passages = [Passage("turn", f"t{i}", f"Alice met Bob in Paris ({i}).", speaker="Carol") for i in range(BATCH + 1)]
    found = make(server).extract(passages)
    sent = [r for r in server.requests[before:] if r.path == "/v1/chat/completions"]
    assert len(sent) == 2  # BATCH passages a request
    body = sent[0].body
    assert body["model"] == "gpt-test" and body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert "[0] (speaker: Carol)\nAlice met Bob in Paris (0)." in body["messages"][-1]["content"]
    assert [(r.source, r.relation_type, r.target) for r in found[0].relations] == [
        ("Alice", "related_to", "Bob"), ("Alice", "related_to", "Paris")]


@pytest.mark.parametrize(("outcome", "tries", "says"), [
    (500, 2, "HTTP 500: The server had an error"), (401, 1, "HTTP 401: Incorrect API key"),
    (429, 2, "HTTP 429: Rate limit reached"), ("not_json", 1, "the answer is not the JSON asked for")])
def test_errors_are_named(server: FakeOpenAIServer, outcome: object, tries: int, says: str) -> None:
    server.script(*[outcome] * tries)  # the client tries a failed request once more, unless the key is wrong
    with pytest.raises(RuntimeError, match=f"LLM extractor at {server.base_url}: {says}"):
        make(server).extract([Passage("memory", "m", "Alice works at Acme.")])


def test_events_come_with_who_and_kind(server: FakeOpenAIServer) -> None:
    found = make(server).extract([Passage("memory", "m", "Alice got it done today.")])[0]
    assert [(e.kind, e.who) for e in found.events] == [("milestone", ("Alice",))]


def test_a_passage_missing_from_the_answer_is_empty_and_the_rest_kept(server: FakeOpenAIServer) -> None:
    server.script("missing")
    found = make(server).extract([Passage("memory", "a", "Alice works at Acme."),
                                  Passage("memory", "b", "Bob lives in Rome.")])
    assert found[0].entities == () and {m.name for m in found[1].entities} == {"Bob", "Rome"}


def test_no_answer_in_time_and_no_server(server: FakeOpenAIServer) -> None:
    server.script("slow", "slow")
    with pytest.raises(RuntimeError, match="no answer in time"):
        make(server, timeout=0.5).extract([Passage("memory", "m", "Alice.")])
    with pytest.raises(RuntimeError, match="cannot connect"):
        LlmExtractor("gpt-test", "http://127.0.0.1:9/v1", "k", 2.0).extract([Passage("memory", "m", "Alice.")])


def test_registered_only_when_a_model_is_configured(server: FakeOpenAIServer) -> None:
    manager = plugin_manager(load_entry_points=False)
    assert "llm" not in collect(manager).extractors
    assert isinstance(collect(manager, extractor_options={"model": "gpt-test", "base_url": server.base_url})
                      .extractors["llm"], LlmExtractor)
