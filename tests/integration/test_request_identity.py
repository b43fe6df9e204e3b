"""Who is calling reaches the use cases from the transport: the audit log records the real actor, every
log line of a call carries its request id, and the SDK still hands tools their arguments unchanged."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from loguru import logger
from sqlalchemy import select

from adapters.sql.tables import audit as audit_log
from config.settings import Settings
from domain.access.principal import Principal
from entrypoints.mcp import identity
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime


def actors(runtime: Runtime) -> list[tuple[str, str]]:
    store: Any = runtime.app.adapters.store()
    with store._engine.connect() as conn:  # noqa: SLF001 - the audit table as written
        return [(row.action, row.actor) for row in conn.execute(select(audit_log.c.action, audit_log.c.actor)
                                                                .order_by(audit_log.c.seq))]


def test_the_callers_principal_is_the_audits_actor_and_each_call_has_a_request_id(tmp_path: Path,
                                                                                    monkeypatch: Any) -> None:
    from mcp import Client

    runtime = Runtime(Settings(memtrove_data_dir=tmp_path / "data", memtrove_warmup=False))
    runtime.start()
    server = build_server(runtime)
    alice = Principal("alice", teams=("eng",), org="acme")
    seen = iter([None, alice])  # the first call as the local owner (stdio), the second as alice (HTTP)
    real = identity.transport_principal
    monkeypatch.setattr(identity, "transport_principal", lambda ctx, local: next(seen) or real(ctx, local))
    lines: list[dict[str, Any]] = []
    sink = logger.add(lambda message: lines.append(dict(message.record["extra"], msg=message.record["message"])),
                      level="INFO")

    async def run() -> None:
        async with Client(server) as client:
            first = await client.call_tool("memory_store", {"content": "The deploy window is Friday.",
                                                            "type": "fact", "confidence": 0.9})
            second = await client.call_tool("memory_store", {"content": "Alice owns the billing service.",
                                                             "type": "fact", "confidence": 0.9})
            assert not first.is_error and not second.is_error

    try:
        asyncio.run(run())
    finally:
        logger.remove(sink)
        runtime.shutdown()
    assert actors(runtime) == [("store", "local"), ("store", "alice")]
    calls = [line for line in lines if line["msg"].startswith("tool_call tool=memory_store")]
    assert len(calls) == 2 and calls[0]["request_id"] != calls[1]["request_id"]
    assert [c["actor"] for c in calls] == ["local", "alice"]
    assert all(len(c["request_id"]) == 16 for c in calls)


def test_a_calls_log_lines_end_with_its_request_id_in_text_and_carry_it_in_json(capsys: Any) -> None:
    import json

    from config.logging import configure_logging

    try:
        configure_logging("INFO", "text")
        logger.info("outside any call")
        with logger.contextualize(request_id="0123456789abcdef", actor="alice"):
            logger.info("tool_call tool=x status=ok")
        configure_logging("INFO", "json")
        with logger.contextualize(request_id="fedcba9876543210", actor="bob"):
            logger.info("tool_call tool=y status=ok")
    finally:
        configure_logging("INFO", "text")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("outside any call")
    assert lines[1].endswith("tool_call tool=x status=ok request_id=0123456789abcdef actor=alice")
    assert json.loads(lines[2])["record"]["extra"] == {"request_id": "fedcba9876543210", "actor": "bob"}
