"""artifact_reembed over MCP: re-embed into an OpenAI-compatible profile, then restart onto it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import blocking, stdio_session

pytestmark = pytest.mark.slow


def test_reembed_then_switch_over_stdio(tmp_path: Path) -> None:
    with FakeOpenAIServer(default_dimensions=16) as fake:
        target = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake-embed", "OPENAI_EMBED_DIMS": "16"}
        with blocking(stdio_session(tmp_path, target)) as client:
            ingested = client.call("artifact_ingest", {"artifact_type": "note", "source_system": "manual",
                                                       "content": "The ferry leaves at nine."})
            art = ingested.structured_content["artifact_id"]
            client.call("memory_store", {"content": "likes ferries", "type": "preference", "confidence": 0.9})
            bad = client.call("artifact_reembed", {"target_embedder": "word2vec"})
            assert bad.is_error and bad.structured_content["error"]["field"] == "target_embedder"
            same = client.call("artifact_reembed", {"target_embedder": "local"})
            assert same.is_error and "already the active" in same.content[0].text
            done = client.call("artifact_reembed", {"target_embedder": "openai-compatible"})
            assert not done.is_error, done.content
            body = done.structured_content
            assert (body["artifacts"], body["memories"], body["complete"]) == (1, 1, True)
            assert body["target_profile"]["dimensions"] == 16 and "MEMTROVE_EMBEDDER" in body["next_step"]
            before = client.call("hybrid_search", {"query": "ferry"}).structured_content["results"][0]
            assert before["provenance"]["embedding_provider"] == "local"
        with blocking(stdio_session(tmp_path, {**target, "MEMTROVE_EMBEDDER": "openai-compatible"})) as client:
            found = client.call("hybrid_search", {"query": "The ferry leaves at nine.", "include_memory": True})
            assert not found.is_error, found.content
            top = found.structured_content["results"][0]
            assert top["id"] == art and top["provenance"]["embedding_provider"] == "openai-compatible"
