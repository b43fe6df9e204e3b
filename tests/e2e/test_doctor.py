"""``memtrove doctor``: finds an index that lost vectors, rebuilds it from the store, and waits its turn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e.scenario import call_ok
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import http_server, http_session, run_cli

pytestmark = pytest.mark.slow


def test_doctor_finds_a_damaged_index_and_rebuilds_it_from_the_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with FakeOpenAIServer(default_dimensions=32) as fake:
        env = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32", "MEMTROVE_SHARED": "false",
               "LOG_LEVEL": "WARNING"}
        with http_server(data, env) as server:
            async def write() -> str:
                async with http_session(server.mcp_url) as client:
                    stored = await call_ok(client, "memory_store", {
                        "content": "the orrery in the attic runs on clockwork", "type": "fact", "confidence": 0.9})
                    await call_ok(client, "history_append", {
                        "conversation_id": "c1", "role": "user", "content": "wind the orrery", "turn_index": 0})
                    await call_ok(client, "memory_search", {"query": "orrery", "mode": "vector"})  # catches up
                    return stored["id"]
            memory_id = asyncio.run(write())
            refused = run_cli(["doctor"], data, env)
            assert refused.returncode == 2 and "memtrove" in refused.stderr  # the running server owns the dir
        healthy = run_cli(["doctor"], data, env)
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        assert "memory           store         1  index         1  ok" in healthy.stdout

        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(data / "chroma"), settings=Settings(anonymized_telemetry=False))
        for collection in client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            if name.startswith("memory__"):
                client.delete_collection(name)  # the index loses every memory vector
        del client

        damaged = run_cli(["doctor"], data, env)
        assert damaged.returncode == 1 and "DIFFERS" in damaged.stdout, damaged.stdout
        rebuilt = run_cli(["doctor", "--rebuild-vectors"], data, env)
        assert rebuilt.returncode == 0 and "rebuilt the vector index" in rebuilt.stdout, rebuilt.stdout + rebuilt.stderr
        def embedded_texts() -> list[str]:  # what was embedded, without /health's checks of the model
            return [t for r in fake.embedding_requests for t in r.body["input"] if t != "health check"]

        embedded = len(embedded_texts())
        with http_server(data, env) as server:
            async def search() -> list[str]:
                async with http_session(server.mcp_url) as client:
                    hits = await call_ok(client, "memory_search", {
                        "query": "the orrery in the attic runs on clockwork", "mode": "vector"})
                    return [h["id"] for h in hits["results"]]
            assert asyncio.run(search())[0] == memory_id
        assert len(embedded_texts()) == embedded + 1  # the query only: the rebuild embedded nothing


def test_doctor_names_the_tokens_the_upgrade_narrowed_until_projects_are_granted(tmp_path: Path) -> None:
    """A store of the release before least privilege (a token made without --project: projects NULL, no
    upgrade mark yet): after the upgrade that token reaches no project, and doctor warns, naming it and the
    command that grants its projects back; a token with projects is not named; once granted, no warning."""
    import re
    import sqlite3

    data = tmp_path / "data"
    with FakeOpenAIServer(default_dimensions=32) as fake:
        env = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32", "LOG_LEVEL": "WARNING"}
        ids = {}
        for user, project in (("bob", "*"), ("alice", "web")):
            made = run_cli(["token", "create", "--user", user, "--project", project, "--label", f"{user}'s"], data, env)
            assert made.returncode == 0, made.stderr
            ids[user] = re.search(r"token_id: (\S+)", made.stdout).group(1)  # type: ignore[union-attr]
        with sqlite3.connect(data / "memtrove.sqlite3") as db:  # as the release before wrote it
            db.execute("DELETE FROM store_meta WHERE key = 'token_projects'")
            db.execute("ALTER TABLE api_tokens DROP COLUMN narrowed_at")
        db.close()
        doctor = run_cli(["doctor"], data, env)
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        warnings = [line for line in doctor.stdout.splitlines() if line.startswith("warning: token")]
        assert len(warnings) == 1 and ids["bob"] in warnings[0] and "user bob" in warnings[0], doctor.stdout
        assert f"memtrove token grant {ids['bob']} --project NAME" in warnings[0]
        listed = run_cli(["token", "list", "--json"], data, env)
        projects = {t["user"]: (t["projects"], bool(t["narrowed_at"])) for t in json.loads(listed.stdout)}
        assert projects == {"bob": ([], True), "alice": (["web"], False)}
        assert run_cli(["doctor"], data, env).stdout.count("warning: token") == 1  # until granted
        assert run_cli(["token", "grant", ids["bob"], "--project", "default"], data, env).returncode == 0
        again = run_cli(["doctor"], data, env)
        assert again.returncode == 0 and "warning: token" not in again.stdout, again.stdout
