"""Who may change what, over MCP (the official client, in process; each call's principal as the
transport would name it): a caller that sees another's item may read it but not delete it, resolve it
or re-embed it; one that cannot see it is told "not found"; store-wide figures and files are each
caller's own; the session tools read as their caller (not as the server's owner)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from adapters.sql.tables import audit as audit_log
from config.settings import Settings
from domain.access.principal import Principal
from entrypoints.mcp import identity
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime

ALICE = Principal("alice", teams=("eng",), org="acme", clearance="sensitive")
BOB = Principal("bob", teams=("eng",), org="acme", clearance="sensitive")
CAROL = Principal("carol", teams=("ops",), org="acme", clearance="sensitive")


class Caller:
    """Whose call the next tool call is (the transport's principal, switched by the test)."""

    def __init__(self) -> None:
        self.principal: Principal | None = None  # None: the local owner (stdio)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: Any) -> Iterator[tuple[Runtime, Caller]]:
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path / "data", memtrove_warmup=False, memtrove_toolsets="all"))
    runtime.start()
    caller = Caller()
    real = identity.transport_principal
    monkeypatch.setattr(identity, "transport_principal", lambda ctx, local: caller.principal or real(ctx, local))
    yield runtime, caller
    runtime.shutdown()


def denials(runtime: Runtime) -> list[tuple[str, str, str]]:
    store: Any = runtime.app.adapters.store()
    with store._engine.connect() as conn:  # noqa: SLF001 - the audit table as written
        rows = conn.execute(select(audit_log.c.action, audit_log.c.actor, audit_log.c.detail)
                            .where(audit_log.c.action == "denied").order_by(audit_log.c.seq)).all()
    return [(row.actor, json.loads(row.detail)["refused"], json.loads(row.detail)["reason"]) for row in rows]


def test_others_items_are_read_not_changed(world: tuple[Runtime, Caller]) -> None:
    from mcp import Client

    runtime, caller = world
    server = build_server(runtime)

    async def run() -> None:
        async with Client(server) as client:
            async def call(who: Principal | None, tool: str, **arguments: Any) -> Any:
                caller.principal = who
                return await client.call_tool(tool, arguments)

            stored = await call(ALICE, "memory_store", content="The eng offsite is in Lisbon in May.", type="fact",
                                confidence=0.9, visibility_scope="team", retention_policy="1y")
            assert not stored.is_error and stored.structured_content["visibility_scope"] == "team"
            assert "expires_at" in stored.structured_content
            memory_id = stored.structured_content["id"]
            listed = await call(BOB, "memory_list")
            assert [h["id"] for h in listed.structured_content["results"]] == [memory_id]
            refused = await call(BOB, "memory_delete", memory_id=memory_id)
            assert refused.is_error and refused.structured_content["error"]["field"] == "memory_id"
            assert "alice's" in refused.structured_content["error"]["message"]
            hidden = await call(CAROL, "memory_delete", memory_id=memory_id)
            missing = await call(CAROL, "memory_delete", memory_id="mem_" + "0" * 32)
            assert hidden.is_error and hidden.structured_content["error"]["type"] == "not_found"
            assert hidden.content[0].text.replace(memory_id, "X") == missing.content[0].text.replace(
                "mem_" + "0" * 32, "X")
            assert (await call(CAROL, "memory_list")).structured_content["results"] == []

            turn = await call(ALICE, "history_append", conversation_id="offsite", role="user",
                              content="Book the Lisbon hotel", turn_index=0, visibility_scope="team")
            assert not turn.is_error and turn.structured_content["visibility_scope"] == "team"
            seen = await call(BOB, "history_get", conversation_id="offsite", owner="alice")
            assert [t["content"] for t in seen.structured_content["turns"]] == ["Book the Lisbon hotel"]
            # A conversation id is each caller's own: bob's "offsite" is his, beside alice's, which stays as it was.
            beside = await call(BOB, "history_append", conversation_id="offsite", role="user",
                                content="and the flights", turn_index=0)
            assert not beside.is_error and beside.structured_content["status"] == "appended"
            assert [t["content"] for t in (await call(BOB, "history_get", conversation_id="offsite"))
                    .structured_content["turns"]] == ["and the flights"]
            again = await call(BOB, "history_get", conversation_id="offsite", owner="alice")
            assert again.structured_content["turns"] == seen.structured_content["turns"]

            whole = await call(BOB, "artifact_reembed", target_embedder="local")
            assert whole.is_error and whole.structured_content["error"]["field"] == "artifact_id"
            health = await call(BOB, "embedding_health")
            assert "stored_vectors" not in health.structured_content
            assert "stored_vectors" in (await call(None, "embedding_health")).structured_content

            await call(ALICE, "add_memory", text="Alice's zapomni note about Lisbon")
            stats = await call(BOB, "get_stats")
            assert stats.structured_content["statistics"]["total_memories"] == 0
            assert (await call(ALICE, "get_stats")).structured_content["statistics"]["total_memories"] == 1

            session = await call(BOB, "store_session_context", session_id="s1", session_iter="v1",
                                 content="# Plan\n\nBob's own session notes.")
            assert not session.is_error, session.content[0].text
            mid = session.structured_content["memory_id"]
            got = await call(BOB, "get_memory_by_id", memory_id=mid)
            assert not got.is_error and "Bob's own session notes." in got.content[0].text
            exported = await call(BOB, "write_document_to_file", memory_id=mid, output_path="plan.md")
            assert not exported.is_error, exported.content[0].text
            assert Path(exported.structured_content["file_path"]).parts[-3:] == ("users", "bob", "plan.md")
            assert (await call(ALICE, "get_memory_by_id", memory_id=mid)).is_error

            gone = await call(ALICE, "memory_delete", memory_id=memory_id)
            assert not gone.is_error

    asyncio.run(run())
    assert denials(runtime) == [("bob", "delete", "another owner's"), ("carol", "delete", "not visible to the caller"),
                                ("alice", "get", "not visible to the caller")]
