"""MEMTROVE_RERANKER and its settings (config/settings_rerank.py): what each value builds, and every bad value
refused with one line naming the variable (the server's start shows it: tests/e2e/test_remote_reranker_mcp.py)."""

from __future__ import annotations

import pytest

from adapters.rerank.remote_providers import (
    CohereTextReranker,
    JinaTextReranker,
    OpenAICompatibleTextReranker,
    VoyageTextReranker,
)
from config.settings import load_settings
from config.settings_rerank import text_reranker
from domain.errors import ConfigurationError

VARIABLES = ("MEMTROVE_RERANKER", "MEMTROVE_RERANKER_URL", "MEMTROVE_RERANKER_MODEL", "MEMTROVE_RERANKER_API_KEY",
             "MEMTROVE_RERANKER_TIMEOUT", "COHERE_API_KEY", "JINA_API_KEY", "VOYAGE_API_KEY", "OPENAI_API_KEY")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def built(env: pytest.MonkeyPatch, **values: str) -> object:
    for name, value in values.items():
        env.setenv(name, value)
    return text_reranker(load_settings())


def test_off_by_default(env: pytest.MonkeyPatch) -> None:
    assert load_settings().memtrove_reranker == "off"
    assert built(env) is None
    assert built(env, MEMTROVE_RERANKER="off", COHERE_API_KEY="ck") is None


@pytest.mark.parametrize("kind, adapter, key_variable, url", [
    ("cohere", CohereTextReranker, "COHERE_API_KEY", "https://api.cohere.com/v2/rerank"),
    ("jina", JinaTextReranker, "JINA_API_KEY", "https://api.jina.ai/v1/rerank"),
    ("voyage", VoyageTextReranker, "VOYAGE_API_KEY", "https://api.voyageai.com/v1/rerank"),
])
def test_a_hosted_api_takes_its_own_key_variable_or_memtroves(env: pytest.MonkeyPatch, kind: str, adapter: type,
                                                               key_variable: str, url: str) -> None:
    reranker = built(env, MEMTROVE_RERANKER=kind.upper(), **{key_variable: "provider-key"})
    assert type(reranker) is adapter and reranker.url == url  # type: ignore[attr-defined]
    assert reranker._api_key == "provider-key"  # type: ignore[attr-defined]
    reranker = built(env, MEMTROVE_RERANKER_API_KEY="memtrove-key", MEMTROVE_RERANKER_MODEL="m-2",
                     MEMTROVE_RERANKER_URL="http://127.0.0.1:9/v9/", MEMTROVE_RERANKER_TIMEOUT="2.5")
    assert reranker._api_key == "memtrove-key" and reranker.name == f"{kind}/m-2"  # type: ignore[attr-defined]
    assert reranker.url == "http://127.0.0.1:9/v9/rerank" and reranker._timeout == 2.5  # type: ignore[attr-defined]


def test_a_local_server_needs_only_its_url_and_never_gets_another_providers_key(env: pytest.MonkeyPatch) -> None:
    reranker = built(env, MEMTROVE_RERANKER="openai-compatible", MEMTROVE_RERANKER_URL="http://127.0.0.1:8080",
                     OPENAI_API_KEY="sk-openai", COHERE_API_KEY="ck")
    assert type(reranker) is OpenAICompatibleTextReranker
    assert reranker.url == "http://127.0.0.1:8080/rerank" and reranker._api_key is None  # type: ignore[attr-defined]
    assert reranker.name == "openai-compatible"  # type: ignore[attr-defined]


@pytest.mark.parametrize("values, said", [
    ({"MEMTROVE_RERANKER": "magic"},
     "Invalid setting MEMTROVE_RERANKER='magic': Input should be 'off', 'cohere', 'jina', 'voyage' or 'openai-compatible'"),
    ({"MEMTROVE_RERANKER": "cohere"},
     "Invalid setting MEMTROVE_RERANKER=cohere needs an API key: set MEMTROVE_RERANKER_API_KEY or COHERE_API_KEY"),
    ({"MEMTROVE_RERANKER": "voyage", "MEMTROVE_RERANKER_API_KEY": "  "},
     "Invalid setting MEMTROVE_RERANKER=voyage needs an API key"),
    ({"MEMTROVE_RERANKER": "openai-compatible"},
     "Invalid setting MEMTROVE_RERANKER=openai-compatible needs MEMTROVE_RERANKER_URL"),
    ({"MEMTROVE_RERANKER": "jina", "JINA_API_KEY": "jk", "MEMTROVE_RERANKER_URL": "api.jina.ai/v1"},
     "Invalid setting MEMTROVE_RERANKER_URL='api.jina.ai/v1': must be an http:// or https:// URL"),
    ({"MEMTROVE_RERANKER_TIMEOUT": "0"}, "Invalid setting MEMTROVE_RERANKER_TIMEOUT='0': Input should be greater than 0"),
    ({"MEMTROVE_RERANKER_TIMEOUT": "soon"}, "Invalid setting MEMTROVE_RERANKER_TIMEOUT='soon'"),
    ({"MEMTROVE_RERANKER_TIMEOUT": "600"},
     "Invalid setting MEMTROVE_RERANKER_TIMEOUT='600': Input should be less than or equal to 60"),
])
def test_a_bad_value_is_refused_with_one_line_naming_it(env: pytest.MonkeyPatch, values: dict[str, str],
                                                         said: str) -> None:
    for name, value in values.items():
        env.setenv(name, value)
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith(said) and "\n" not in message, message
    assert "jk" not in message.replace("jina", "")


@pytest.mark.parametrize("kind", ["off", "voyage"])
def test_the_servers_retriever_gets_the_rerank_model(env: pytest.MonkeyPatch, tmp_path, kind: str) -> None:
    from config.container import Application
    from config.settings import Settings

    settings = Settings(memtrove_data_dir=tmp_path, memtrove_reranker=kind, voyage_api_key="vk")
    app = Application(settings=settings)
    try:
        retriever = app.use_cases.retrieve()
        if kind == "off":
            assert retriever.text_reranker is None
        else:
            assert isinstance(retriever.text_reranker, VoyageTextReranker)
            assert retriever.text_reranker.name == "voyage/rerank-2.5"
        assert retriever.scorer is not None  # the learned stage: what a failing rerank model falls back to
    finally:
        app.shutdown_resources()


def test_a_rule_over_several_settings_says_its_own_line(env: pytest.MonkeyPatch) -> None:
    """Before: 'Invalid setting ?={every variable set, keys included}: Value error, ...' (the validator's input)."""
    env.setenv("MEMTROVE_VECTOR_STORE", "pgvector")
    env.setenv("OPENAI_API_KEY", "sk-never-shown")
    env.delenv("MEMTROVE_DATABASE_URL", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    assert str(caught.value) == ("Invalid setting MEMTROVE_VECTOR_STORE=pgvector keeps vectors in PostgreSQL: set "
                                 "MEMTROVE_DATABASE_URL to a postgresql:// URL")
