"""Drive a real ``memtrove serve`` (stdio) with raw JSON-RPC lines, so a test sees how the process ended.

The mcp client hides the child process; the crash-safety test needs its exit status (-9 after a
SIGKILL), so it speaks the protocol itself: initialize, notifications/initialized, tools/call.
It also holds the fake embedder the crash test counts on and the documents it ingests; the stores
are read directly by ``tests/support/store_state.py``.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import memtrove_command, server_env

PROTOCOL_VERSION = "2025-06-18"


class QuickFakeOpenAIServer(FakeOpenAIServer):
    """The fake OpenAI server, answering without Nagle's delay; optionally slow on documents only.

    Its handler sends the headers and the body in two writes; with Nagle's algorithm the body then
    waits for the client's delayed ACK, ~40 ms per request. The crash test makes thousands.
    ``document_delay`` holds every request of more than one text that long (queries stay quick), so
    a test can watch an ingest under way.
    """

    def __init__(self, *args: Any, document_delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.document_delay = document_delay

    def inputs(self) -> list[str]:
        """Every text the server was asked to embed, in the order the requests arrived."""
        found: list[str] = []
        for request in self.embedding_requests:
            texts = request.body.get("input") if isinstance(request.body, dict) else None
            found += [texts] if isinstance(texts, str) else list(texts or [])
        return found

    def _embeddings(self, body: Any, outcome: Any) -> tuple[int, dict[str, Any]]:
        texts = body.get("input") if isinstance(body, dict) else None
        if self.document_delay and isinstance(texts, list) and len(texts) > 1:
            self._stopping.wait(self.document_delay)
        return super()._embeddings(body, outcome)

    def start(self) -> QuickFakeOpenAIServer:
        super().start()
        httpd = getattr(self, "_httpd", None)
        if httpd is not None:
            accept = httpd.get_request

            def get_request() -> tuple[socket.socket, Any]:
                conn, address = accept()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return conn, address

            httpd.get_request = get_request
        return self


class ServerDied(RuntimeError):
    """The server process ended (or closed stdout) before answering a request."""

    def __init__(self, message: str, returncode: int | None) -> None:
        super().__init__(message)
        self.returncode = returncode


class RawStdioServer:
    """One ``memtrove serve`` subprocess spoken to over its stdin/stdout, one JSON-RPC message a line."""

    def __init__(self, data_dir: Path, env: Mapping[str, str], stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(stderr_path, "a", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [*memtrove_command(), "serve"], env=server_env(data_dir, env), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, bufsize=0,
            )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="raw-stdio-reader", daemon=True)
        self._reader.start()
        self._next_id = 0

    # -- plumbing --------------------------------------------------------------------------
    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ServerDied(f"could not write to the server: {exc}", self._wait_exit()) from exc

    def _wait_exit(self, timeout: float = 10.0) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting: its answer is dropped when it comes. Returns its id."""
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        return self._next_id

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 120.0) -> dict[str, Any]:
        """Send a request and return its response message; ServerDied if stdout closes first."""
        ident = self.send(method, params)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {method} within {timeout:.0f}s; stderr:\n{self.stderr()[-3000:]}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                code = self._wait_exit()
                raise ServerDied(f"server closed stdout before answering {method} (exit {code})", code)
            message = json.loads(line)  # stdout carries protocol messages only
            if message.get("id") == ident and ("result" in message or "error" in message):
                return message

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    # -- protocol ----------------------------------------------------------------------------
    def initialize(self) -> dict[str, Any]:
        answer = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "crash-driver", "version": "1"}}, timeout=60.0)
        assert "result" in answer, answer
        self.notify("notifications/initialized")
        return answer["result"]

    def call(self, tool: str, arguments: dict[str, Any], timeout: float = 120.0) -> ToolResult:
        answer = self.request("tools/call", {"name": tool, "arguments": arguments}, timeout=timeout)
        if "error" in answer:
            return ToolResult(True, json.dumps(answer["error"]), None)
        result = answer["result"]
        text = "".join(part.get("text", "") for part in result.get("content", []))
        return ToolResult(bool(result.get("isError")), text, result.get("structuredContent"))

    def close(self, timeout: float = 15.0) -> int:
        """Close stdin (the stdio way to stop a server) and return the exit code; SIGKILL if it hangs."""
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait(timeout=5)
        self._reader.join(timeout=5)
        return self.process.returncode

    @contextmanager
    def frozen(self, timeout: float = 10.0) -> Iterator[None]:
        """SIGSTOP the server and wait until every thread is stopped; SIGCONT on the way out.

        Meanwhile its files hold exactly what a kill -9 at that instant would leave, so a copy
        taken then is a crash image of the live server (no help from a clean shutdown).
        """
        pid = self.process.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + timeout
            while not _all_threads_stopped(pid):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server {pid} did not stop within {timeout:.0f}s")
                time.sleep(0.005)
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    def __enter__(self) -> RawStdioServer:
        try:
            self.initialize()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _all_threads_stopped(pid: int) -> bool:
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
        if stat.rsplit(")", 1)[1].split()[0] not in ("T", "t"):
            return False
    return True


@dataclass(frozen=True)
class ToolResult:
    is_error: bool
    text: str
    structured: dict[str, Any] | None


# ------------------------------------------------------------------------------------ documents

_ONSETS = ["b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "pl",
           "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "x"]


def document(seed: int, sentences: int) -> str:
    """Deterministic, non-repetitive prose: invented words, numbers and punctuation, in paragraphs."""
    rng = random.Random(seed)
    lexicon = sorted({"".join(rng.choice(part) for part in (_ONSETS, _VOWELS, _CODAS, _VOWELS, _CODAS))
                      for _ in range(4000)})
    paragraphs: list[str] = []
    current: list[str] = []
    for n in range(sentences):
        words = [rng.choice(lexicon) for _ in range(rng.randint(6, 16))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(2, 99_999)))
        sentence = " ".join(words)
        sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", "!", "?", ";"])
        current.append(f"{sentence}" if n % 7 else f"[{n}] {sentence}")
        if rng.random() < 0.12:
            paragraphs.append(" ".join(current))
            current = []
    paragraphs.append(" ".join(current))
    return "\n\n".join(p for p in paragraphs if p)
