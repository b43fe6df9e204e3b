"""A third-party chunker plugin end to end: pip-installed package, entry point, MEMTROVE_PLUGINS, MCP."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.scenario import call_ok
from tests.support.mcp_procs import blocking, stdio_session

pytestmark = pytest.mark.slow
TEXT = " ".join(f"Sentence {i} of the plugin test talks about harbour cranes and tides." for i in range(120))


async def ingest(client, **extra):
    return await client.call_tool("artifact_ingest", {"artifact_type": "doc", "source_system": "plugin-e2e",
                                                      "source_id": "s1", "content": TEXT, **extra})


def test_an_allowed_plugin_chunks_through_mcp_and_an_unlisted_one_is_not_loaded(tmp_path: Path) -> None:
    async def allowed(client):
        result = await call_ok(client, "artifact_ingest", {"artifact_type": "doc", "source_system": "plugin-e2e",
                                                           "source_id": "s1", "content": TEXT, "chunker": "sentences"})
        assert result["chunker"] == "sentences" and result["num_chunks"] > 1, result
        got = await call_ok(client, "artifact_get", {"artifact_id": result["artifact_id"], "include_content": True,
                                                     "include_chunks": True})
        assert got["content"] == TEXT and all(c["metadata"] == {"sentences": True} for c in got["chunks"])

    async def unlisted(client):
        result = await ingest(client, chunker="sentences")
        assert result.is_error and (result.structured_content or {})["error"]["field"] == "chunker"

    with blocking(stdio_session(tmp_path / "a", env={"MEMTROVE_PLUGINS": "sentences"})) as client:
        client.run(allowed)
    with blocking(stdio_session(tmp_path / "b")) as client:
        client.run(unlisted)
