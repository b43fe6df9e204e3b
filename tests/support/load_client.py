"""One load client: its share of the operation mix over one MCP session, every write through the ledger.

Each client has its own conversation and shares one with all the others; every item it writes
starts with a unique rare token, so it is findable by words, and by vector with its exact text
as the query. A client is pinned to a URL; when that one goes down it carries on through another
and comes back once its own answers ``/health`` again. Reads check what they see on the way:
read-your-writes misses and stale or partial reads are counted as anomalies.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from domain.ids import artifact_id
from tests.support.load_records import (
    ABSENT, GOOD, SOURCE_SYSTEM, ArtifactEntry, Expect, Failure, artifact_hits, first_word, hit_ids,
)
from tests.support.mcp_procs import http_session

if TYPE_CHECKING:
    from tests.support.load import LoadRun

SAME_TURN_AGAIN = 0.3  # share of shared-conversation appends sent twice (the second must be "unchanged")
LARGE_CHARS = 20_000  # a large artifact: chunked
RECONNECT_TIMEOUT = 180.0  # seconds a client keeps trying to reach any URL before giving up
WORDS = ("alpha amber anchor april archive atlas autumn badge basil beacon bridge budget cabin canal cedar "
         "chart cipher cobalt comet copper coral crane delta desert dune ember engine falcon fern fjord "
         "forest garnet glacier granite harbor hazel heron island ivory jasper juniper kernel lagoon lantern "
         "ledger lilac marble meadow mercury meteor mirror nectar nickel oasis olive onyx orbit parcel pepper "
         "pilot plaza prism quartz quill raven reef ribbon saffron salmon signal silver summit tango thistle "
         "timber topaz tundra umber valley velvet violet walnut willow zephyr").split()
MEMORY_TYPES = ("preference", "fact", "project", "decision")


def leaf_messages(exc: BaseException) -> list[str]:
    if isinstance(exc, BaseExceptionGroup):
        return [m for inner in exc.exceptions for m in leaf_messages(inner)]
    return [f"{type(exc).__name__}: {exc}"]


def driver_fault(exc: BaseException) -> bool:
    """A bug of this driver (not a transport failure), which must not pass for one."""
    faults = (KeyError, AttributeError, TypeError, NameError, AssertionError, IndexError)
    if isinstance(exc, BaseExceptionGroup):
        return any(driver_fault(inner) for inner in exc.exceptions)
    return isinstance(exc, faults)


@dataclass(frozen=True)
class Reply:
    data: dict[str, Any] | None = None  # structured content of a successful call
    error: str | None = None  # a tool error's message

    @property
    def ok(self) -> bool:
        return self.data is not None


class Client:
    """One MCP client doing its share of the mix; every write goes through the run's ledger."""

    def __init__(self, run: LoadRun, n: int) -> None:
        self.run, self.n, self.ledger = run, n, run.ledger
        self.rng = random.Random(f"{run.config.seed}-{n}")
        self.home = run.urls[n % len(run.urls)]
        self.conversation = f"{run.id}-c{n:02d}"
        self.ledger.conversations.update({self.conversation, run.shared_conversation})
        self.labels = list(run.config.weights)
        self.weights = [run.config.weights[label] for label in self.labels]
        self.seq = 0
        self.next_turn = 0
        self.memories: list[str] = []  # tokens of own live memories
        self.turns: list[int] = []  # own acknowledged turn indexes
        self.artifacts: list[str] = []  # source ids of own live artifacts
        self.session: Any = None
        self.url = self.home
        self.phase = "idle"
        self.call_started = 0.0
        self.current: tuple[str, str] = ("", "")

    # ------------------------------------------------------------------------ sessions and calls
    async def drive(self, ops: int) -> None:
        done = 0
        while done < ops:
            url = await self.reachable()
            if url is None:
                self.run.gave_up += 1
                self.run.ops_done += ops - done
                return
            self.phase = "connecting"
            self.call_started = time.monotonic()
            try:
                async with http_session(url, self.run.config.token) as session:
                    self.session, self.url = session, url
                    while done < ops:
                        self.phase = "idle"
                        await getattr(self, "op_" + self.rng.choices(self.labels, self.weights)[0])()
                        done += 1
                        self.run.ops_done += 1
                        if url != self.home and done % 10 == 0 and await self.run.healthy(self.home):
                            break  # back to its own replica
                self.phase = "idle"
            except Exception as exc:  # the transport failed: the session is gone
                if driver_fault(exc):
                    raise
                tool = {"calling": self.current[0], "connecting": "(connect)"}.get(self.phase, "(session)")
                self.run.stats.failures.append(Failure(url, tool, self.call_started, time.monotonic(),
                                                       leaf_messages(exc)[0]))
                if self.phase == "calling":
                    done += 1
                    self.run.ops_done += 1
                self.run.inflight.pop(id(self), None)
                await asyncio.sleep(0.2)
            finally:
                self.session = None

    async def reachable(self) -> str | None:
        """Its own URL if it answers /health, else the first other one that does; None after the timeout."""
        deadline = time.monotonic() + RECONNECT_TIMEOUT
        order = [self.home, *[u for u in self.run.urls if u != self.home]]
        while time.monotonic() < deadline:
            for url in order:
                if await self.run.healthy(url):
                    return url
            await asyncio.sleep(0.25)
        return None

    async def call(self, tool: str, args: dict[str, Any], label: str) -> Reply:
        """One tool call; a transport failure ends the session (the caller's write stays unanswered)."""
        self.phase, self.current, self.call_started = "calling", (tool, label), time.monotonic()
        self.run.inflight[id(self)] = (self.url, tool, label, self.call_started)
        result = await self.session.call_tool(tool, args)
        elapsed = time.monotonic() - self.call_started
        del self.run.inflight[id(self)]
        self.phase = "idle"
        error = None
        if result.is_error:
            err = (result.structured_content or {}).get("error") or {}
            error = err.get("message") or " ".join(getattr(b, "text", "") for b in result.content) or "tool error"
        self.run.stats.answered(tool, label, elapsed, error)
        return Reply(None, error) if error is not None else Reply(result.structured_content or {}, None)

    def anomaly(self, name: str) -> None:
        self.run.stats.anomalies[name] += 1

    # ---------------------------------------------------------------------------------- content
    def token(self) -> str:
        self.seq += 1
        return f"{self.ledger.prefix}c{self.n:02d}n{self.seq:05d}"

    def sentence(self, words: int = 10) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(words)).capitalize() + "."

    def document(self, source_token: str, large: bool) -> str:
        head = f"{self.token()} {source_token} " + self.sentence()
        if not large:
            return head + " " + " ".join(self.sentence(self.rng.randint(6, 10)) for _ in range(4))
        paragraphs, size, index = [head], len(head), 0
        while size < LARGE_CHARS:
            index += 1
            body = " ".join(self.sentence(self.rng.randint(8, 14)) for _ in range(5))
            paragraph = f"{source_token} {body}" if index % 5 == 0 else body
            paragraphs.append(paragraph)
            size += len(paragraph) + 2
        return "\n\n".join(paragraphs)

    # ------------------------------------------------------------------------------- memories
    async def op_store(self) -> None:
        token = self.token()
        content = f"{token} {self.sentence(self.rng.randint(6, 16))}"
        expect = self.ledger.memories[token] = Expect()
        expect.attempt(content)
        args = {"content": content, "type": self.rng.choice(MEMORY_TYPES),
                "confidence": round(self.rng.uniform(0.3, 1.0), 2)}
        if self.rng.random() < 0.3:
            args["conversation_id"] = self.conversation
        reply = await self.call("memory_store", args, "store")
        if reply.ok:
            expect.ack(content)
            self.ledger.memory_ids[token] = reply.data["id"]
            self.memories.append(token)
        else:
            expect.fail(content)

    async def op_delete(self) -> None:
        if not self.memories:
            return await self.op_store()
        token = self.memories.pop(self.rng.randrange(len(self.memories)))
        expect = self.ledger.memories[token]
        expect.attempt(ABSENT)
        reply = await self.call("memory_delete", {"memory_id": self.ledger.memory_ids[token]}, "delete")
        expect.ack(ABSENT) if reply.ok else expect.fail(ABSENT)

    async def op_search(self) -> None:
        """Read-your-writes: one of its recent memories, by its text (hybrid, vector) or its token (lexical)."""
        if not self.memories:
            await self.call("memory_search", {"query": self.sentence(), "limit": 5}, "search")
            return
        token = self.rng.choice(self.memories[-20:])
        mode = self.rng.choice(("hybrid", "vector", "lexical"))
        query = token if mode == "lexical" else self.ledger.memories[token].acked
        reply = await self.call("memory_search", {"query": query, "mode": mode, "limit": 5}, "search")
        if reply.ok and self.ledger.memory_ids[token] not in hit_ids(reply.data):
            self.anomaly(f"read_your_writes_miss memory_search mode={mode}")

    async def op_list(self) -> None:
        args: dict[str, Any] = {"limit": 20}
        if self.rng.random() < 0.5:
            args["type"] = self.rng.choice(MEMORY_TYPES)
        await self.call("memory_list", args, "list")

    # -------------------------------------------------------------------------------- history
    async def append(self, conversation: str, index: int, content: str, label: str, status: str,
                     role: str = "user") -> bool:
        expect = self.ledger.turns.setdefault((conversation, index), Expect())
        expect.attempt(content)
        reply = await self.call("history_append", {
            "conversation_id": conversation, "role": role, "content": content, "turn_index": index}, label)
        if not reply.ok:
            expect.fail(content)
            return False
        expect.ack(content)
        self.run.stats.statuses[f"{label}: {reply.data.get('status')}"] += 1
        if reply.data.get("status") != status:
            self.anomaly(f"unexpected_status {label}: {reply.data.get('status')} (expected {status})")
        return True

    async def op_append_own(self) -> None:
        index, self.next_turn = self.next_turn, self.next_turn + 1
        if await self.append(self.conversation, index, f"{self.token()} {self.sentence()}", "append_own",
                             "appended"):
            self.turns.append(index)

    async def op_append_replace(self) -> None:
        if not self.turns:
            return await self.op_append_own()
        index = self.rng.choice(self.turns)
        await self.append(self.conversation, index, f"{self.token()} {self.sentence()}", "append_replace",
                          "replaced")

    async def op_append_shared(self) -> None:
        index = self.run.next_shared_turn()
        content, role = f"{self.token()} {self.sentence()}", self.rng.choice(("user", "assistant"))
        if await self.append(self.run.shared_conversation, index, content, "append_shared", "appended", role) \
                and self.rng.random() < SAME_TURN_AGAIN:
            await self.append(self.run.shared_conversation, index, content, "append_same", "unchanged", role)

    async def op_history_get(self) -> None:
        conversation = self.rng.choice((self.conversation, self.run.shared_conversation))
        reply = await self.call("history_get", {"conversation_id": conversation,
                                                "limit": self.rng.choice((16, 50))}, "history_get")
        for turn in (reply.data or {}).get("turns", []):
            expect = self.ledger.turns.get((conversation, turn["turn_index"]))
            verdict = expect.judge(turn["content"]) if expect else "phantom"
            if verdict not in GOOD:
                self.anomaly(f"history_get read a {verdict} turn")

    # ------------------------------------------------------------------------------ artifacts
    async def ingest(self, source_id: str, content: str, label: str, status: str) -> bool:
        entry = self.ledger.artifacts[source_id]
        entry.expect.attempt(content)
        reply = await self.call("artifact_ingest", {
            "artifact_type": "doc" if entry.large else "note", "source_system": SOURCE_SYSTEM,
            "source_id": source_id, "content": content}, label)
        if not reply.ok:
            entry.expect.fail(content)
            return False
        # "indexing": past the call budget the ingest goes on in the background; it is accepted.
        answered = reply.data.get("status")
        entry.expect.ack(content)
        entry.indexing = answered == "indexing"
        self.run.stats.statuses[f"{label}: {answered}"] += 1
        if reply.data.get("artifact_id", entry.art_id) != entry.art_id:
            self.anomaly("artifact_ingest answered another artifact id")
        if answered not in (status, "indexing"):
            self.anomaly(f"unexpected_status {label}: {answered} (expected {status})")
        return True

    async def new_artifact(self, large: bool) -> None:
        source_token = self.token()
        source_id = f"{self.run.id}-c{self.n:02d}-{source_token}"
        self.ledger.artifacts[source_id] = ArtifactEntry(artifact_id(SOURCE_SYSTEM, source_id, ""), large)
        label = "ingest_large" if large else "ingest_small"
        if await self.ingest(source_id, self.document(source_token, large), label, "ingested"):
            self.artifacts.append(source_id)

    async def op_ingest_small(self) -> None:
        await self.new_artifact(large=False)

    async def op_ingest_large(self) -> None:
        await self.new_artifact(large=True)

    async def op_reingest(self) -> None:
        if not self.artifacts:
            return await self.op_ingest_small()
        source_id = self.rng.choice(self.artifacts)
        entry = self.ledger.artifacts[source_id]
        source_token = first_word(entry.expect.acked.split(" ", 1)[1])
        label = "reingest_large" if entry.large else "reingest_small"
        await self.ingest(source_id, self.document(source_token, entry.large), label, "replaced")

    async def op_artifact_delete(self) -> None:
        if not self.artifacts:
            return await self.op_ingest_small()
        entry = self.ledger.artifacts[self.artifacts.pop(self.rng.randrange(len(self.artifacts)))]
        entry.expect.attempt(ABSENT)
        reply = await self.call("artifact_delete", {"artifact_id": entry.art_id}, "artifact_delete")
        entry.expect.ack(ABSENT) if reply.ok else entry.expect.fail(ABSENT)

    async def op_artifact_get(self) -> None:
        """Nothing partial is ever visible: its own artifact comes back whole, as last written."""
        if not self.artifacts:
            return await self.op_ingest_small()
        entry = self.ledger.artifacts[self.rng.choice(self.artifacts)]
        reply = await self.call("artifact_get", {"artifact_id": entry.art_id, "include_content": True},
                                "artifact_get")
        if reply.ok:
            job = reply.data.get("new_version") or ({} if "metadata" in reply.data else reply.data)
            if job.get("status") == "failed":
                self.anomaly("an accepted artifact ingest failed in the background")
            if job:  # an ingest still under way: its content is not to be seen yet
                return
            entry.indexing = False
            verdict = entry.expect.judge(reply.data.get("content", ABSENT))
            if verdict not in GOOD:
                self.anomaly(f"artifact_get read a {verdict} artifact")
        elif "not found" in (reply.error or ""):
            self.anomaly("artifact_get: a live artifact was not found")

    async def op_hybrid_search(self) -> None:
        """Read-your-writes: one of its small artifacts (exact text) or turns, found through hybrid_search."""
        mode = self.rng.choice(("hybrid", "vector"))
        small = [s for s in self.artifacts[-20:] if not self.ledger.artifacts[s].large
                 and self.ledger.artifacts[s].expect.certain and not self.ledger.artifacts[s].indexing]
        turns = [i for i in self.turns[-20:] if self.ledger.turns[(self.conversation, i)].certain]
        if small and (not turns or self.rng.random() < 0.5):
            entry = self.ledger.artifacts[self.rng.choice(small)]
            reply = await self.call("hybrid_search", {"query": entry.expect.acked, "mode": mode, "limit": 5},
                                    "hybrid_search")
            if reply.ok and entry.art_id not in artifact_hits(reply.data):
                self.anomaly(f"read_your_writes_miss hybrid_search artifact mode={mode}")
        elif turns:
            index = self.rng.choice(turns)
            content = self.ledger.turns[(self.conversation, index)].acked
            reply = await self.call("hybrid_search", {
                "query": content, "mode": mode, "limit": 5, "include_history": True,
                "filters": {"conversation_id": self.conversation}}, "hybrid_search")
            if reply.ok and f"{self.conversation}_turn_{index}" not in hit_ids(reply.data):
                self.anomaly(f"read_your_writes_miss hybrid_search turn mode={mode}")
        else:
            await self.call("hybrid_search", {"query": self.sentence(), "include_memory": True, "limit": 5},
                            "hybrid_search")
