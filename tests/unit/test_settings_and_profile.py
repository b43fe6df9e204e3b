"""Settings fail with one line naming the variable; a store never mixes embedding profiles."""

from __future__ import annotations

import pytest

from adapters.memory.basics import InMemoryMetadataStore
from config.settings import Settings, is_loopback, load_settings
from domain.errors import ConfigurationError
from domain.model import EmbeddingProfile
from domain.upkeep.maintenance import CheckProfile

LOCAL = EmbeddingProfile("local", "all-MiniLM-L6-v2", 384, 256)
OPENAI = EmbeddingProfile("openai", "text-embedding-3-large", 3072, 8191)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MCP_PORT", "MEMTROVE_EMBEDDER", "CHUNK_TARGET_TOKENS", "CHUNK_OVERLAP_TOKENS", "LOG_LEVEL",
                 "OPENAI_EMBED_DIMS", "MEMTROVE_DATA_DIR", "OPENAI_API_KEY", "SINGLE_PIECE_MAX_TOKENS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("variable, value", [
    ("MCP_PORT", "abc"), ("MCP_PORT", "70000"), ("MEMTROVE_EMBEDDER", "word2vec"),
    ("OPENAI_EMBED_DIMS", "0"), ("LOG_LEVEL", "LOUD"), ("CHUNK_TARGET_TOKENS", "-5"),
])
def test_bad_values_name_the_variable_in_one_line(monkeypatch, variable, value) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    assert variable in raised.value.message and "\n" not in raised.value.message


def test_defaults_are_the_embedded_local_setup(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMTROVE_DATA_DIR", str(tmp_path))
    settings = load_settings()
    assert settings.memtrove_embedder == "local" and settings.chroma_host is None
    assert settings.database_url == f"sqlite:///{tmp_path / 'memtrove.sqlite3'}"
    assert settings.mcp_port == 3000 and settings.log_level == "INFO"


def test_chunk_sizes_belong_to_the_profile() -> None:
    local = Settings().chunk_spec(LOCAL)
    assert local.target_tokens <= 256 and local.single_piece_max_tokens <= 256
    openai = Settings(memtrove_embedder="openai").chunk_spec(OPENAI)
    assert (openai.single_piece_max_tokens, openai.target_tokens, openai.overlap_tokens) == (1200, 900, 100)


def test_a_chunk_size_the_model_cannot_read_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="CHUNK_TARGET_TOKENS=900"):
        Settings(chunk_target_tokens=900).chunk_spec(LOCAL)
    with pytest.raises(ConfigurationError, match="CHUNK_OVERLAP_TOKENS"):
        Settings(chunk_target_tokens=100, chunk_overlap_tokens=100).chunk_spec(LOCAL)


def test_non_loopback_http_needs_a_token() -> None:
    with pytest.raises(ConfigurationError, match="MEMTROVE_HTTP_TOKEN"):
        Settings().check_serving("0.0.0.0")
    Settings(memtrove_http_token="s3cret").check_serving("0.0.0.0")
    Settings().check_serving("127.0.0.1")
    assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("10.0.0.1")


def test_first_start_records_the_profile_later_starts_must_match() -> None:
    store = InMemoryMetadataStore()
    assert CheckProfile(store, LOCAL)() == LOCAL
    assert CheckProfile(store, LOCAL)() == LOCAL
    with pytest.raises(ConfigurationError) as raised:
        CheckProfile(store, OPENAI)()
    assert "local/all-MiniLM-L6-v2/384d" in raised.value.message
    assert "openai/text-embedding-3-large/3072d" in raised.value.message
    assert store.stored_profile() == LOCAL
