"""A crash during a supersession leaves the old state or the new one, never a mix: a client supersedes a
memory again and again over HTTP while the server is killed (SIGKILL) at a random moment, three times;
after each restart the chain of versions reads whole (each version ended by the next, one current), every
supersession the client saw acknowledged is in it, at most the one in flight beyond, and a search finds
only the current version."""

from __future__ import annotations

import asyncio
import random
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scenario import call_ok
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import http_server, http_session

pytestmark = pytest.mark.slow


def env(fake: FakeOpenAIServer) -> dict[str, str]:
    return {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32", "MEMTROVE_SHARED": "false"}


def content(n: int) -> str:
    return f"The team's meeting room is room {n} (version {n})."


async def supersede_until_stopped(url: str, current: str, n: int, acknowledged: list[tuple[str, int]],
                                  stop: threading.Event) -> None:
    """Supersede the current memory until the server dies (a call fails) or ``stop`` is set."""
    try:
        async with http_session(url) as client:
            while not stop.is_set():
                made = await call_ok(client, "memory_store", {"content": content(n + 1), "type": "fact",
                                                              "confidence": 0.9, "supersedes": current})
                current, n = made["id"], n + 1
                acknowledged.append((current, n))
    except BaseException:  # noqa: BLE001 - the kill ends the session: the failed call is the one in flight
        return


async def check_chain(url: str, first: str, acknowledged: list[tuple[str, int]]) -> tuple[str, int]:
    """The chain from ``first`` reads whole; returns its current version and number."""
    async with http_session(url) as client:
        history = await call_ok(client, "memory_history", {"memory_id": first})
        versions = history["versions"]
        ids = [v["id"] for v in versions]
        assert ids[0] == first and len(set(ids)) == len(ids)
        for before, after in zip(versions, versions[1:]):
            assert before["superseded_by"] == after["id"] and before.get("valid_to"), (before, after)
        assert versions[-1].get("superseded_by") is None and versions[-1].get("valid_to") is None
        seen = [i for i, _ in acknowledged]
        assert ids[1:len(seen) + 1] == seen, "an acknowledged supersession was lost"
        assert len(ids) - 1 - len(seen) <= 1, "more versions than the client wrote"
        current = versions[-1]
        n = int(re.search(r"version (\d+)", current["content"]).group(1))  # type: ignore[union-attr]
        assert current["content"] == content(n) and n == len(ids) - 1
        found = await call_ok(client, "memory_search", {"query": "which meeting room does the team use", "limit": 10})
        rooms = [h["id"] for h in found["results"]]
        assert rooms == [current["id"]], "a search answered a superseded version"
        return current["id"], n


def test_a_kill_during_supersessions_leaves_the_old_or_the_new_state(tmp_path: Path) -> None:
    data = tmp_path / "data"
    chance = random.Random(26)
    acknowledged: list[tuple[str, int]] = []
    first = current = ""
    n = 0
    with FakeOpenAIServer(default_dimensions=32) as fake:
        for kill in range(4):  # three kills; each start after one reads the chain first
            with http_server(data, env(fake)) as server:
                if kill == 0:
                    async def begin() -> str:
                        async with http_session(server.mcp_url) as client:
                            made = await call_ok(client, "memory_store", {"content": content(0), "type": "fact",
                                                                          "confidence": 0.9})
                            return str(made["id"])
                    first = current = asyncio.run(begin())
                else:
                    current, n = asyncio.run(check_chain(server.mcp_url, first, acknowledged))
                    # What was in flight and committed is the chain's now: the client goes on from there.
                    if acknowledged and acknowledged[-1][0] != current:
                        acknowledged.append((current, n))
                if kill == 3:
                    break
                done = threading.Event()
                writes = threading.Thread(target=lambda url=server.mcp_url, c=current, k=n: asyncio.run(
                    supersede_until_stopped(url, c, k, acknowledged, done)))
                before = len(acknowledged)
                writes.start()
                deadline = time.monotonic() + 60
                while len(acknowledged) < before + 3 and time.monotonic() < deadline:
                    time.sleep(0.02)  # let a few land first: the kill then falls amid the writes
                time.sleep(chance.uniform(0.0, 0.4))
                server.process.send_signal(signal.SIGKILL)
                server.process.wait(10)
                done.set()
                writes.join(30)
                assert not writes.is_alive()
    assert n >= 9
