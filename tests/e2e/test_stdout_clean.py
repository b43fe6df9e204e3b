"""Over stdio, stdout carries JSON-RPC and nothing else; logs go to stderr, without the stored content."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scenario import EXPECTED_TOOLS

from tests.support.mcp_procs import memtrove_command, server_env

pytestmark = pytest.mark.slow

SECRET = "Zanzibar-7731: the locker code of the user is 4821"
TIMEOUT = 60.0


class RawStdioServer:
    """``memtrove serve`` driven with hand-written JSON-RPC lines; every stdout line is kept."""

    def __init__(self, data_dir: Path, stderr_path: Path, env: dict[str, str]) -> None:
        self.stderr_path = stderr_path
        with open(stderr_path, "w", encoding="utf-8") as errlog:
            self.process = subprocess.Popen(
                [*memtrove_command(), "serve"], env=server_env(data_dir, env), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=errlog)
        self.lines: list[bytes] = []
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def response(self, request_id: int) -> dict[str, Any]:
        """The next line that answers ``request_id`` (other lines are kept and checked later)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                line = self._queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no answer to request {request_id}; stderr:\n{self.stderr()}") from None
            if line is None:
                raise EOFError(f"stdout closed before answering {request_id}; stderr:\n{self.stderr()}")
            try:
                message = json.loads(line)
            except ValueError:
                continue  # reported by the stdout check
            if isinstance(message, dict) and message.get("id") == request_id:
                return message

    def close(self) -> int:
        """Close stdin (end of session) and wait; the server must exit by itself."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
            raise

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module", params=["INFO", "DEBUG"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One full raw session per log level, with the default warm-up on (its thread must not print either)."""
    root = tmp_path_factory.mktemp(f"e2e-stdout-{request.param.lower()}")
    server = RawStdioServer(root / "data", root / "stderr.log",
                            {"MEMTROVE_WARMUP": "true", "LOG_LEVEL": request.param})
    try:
        server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-e2e", "version": "1.0"}}})
        initialized = server.response(1)
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        tools = server.response(2)
        server.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "memory_store",
            "arguments": {"content": SECRET, "type": "fact", "confidence": 0.9}}})
        stored = server.response(3)
        server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "memory_store", "arguments": {"content": "", "type": "fact", "confidence": 0.9}}})
        refused = server.response(4)
        server.send({"jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": {}})
        unknown = server.response(5)
        server.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
            "name": "memory_store", "arguments": {"type": "fact", "confidence": 0.9}}})
        missing = server.response(6)
    finally:
        returncode = server.close()
    return {"initialized": initialized, "tools": tools, "stored": stored, "refused": refused,
            "unknown": unknown, "missing": missing, "lines": server.lines, "stderr": server.stderr(),
            "returncode": returncode}


def test_every_stdout_line_is_json_rpc(session: dict[str, Any]) -> None:
    lines = session["lines"]
    assert len(lines) >= 5
    for raw in lines:
        assert raw.endswith(b"\n"), raw
        message = json.loads(raw)  # anything else on stdout breaks the protocol
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", raw
        assert ("id" in message and ("result" in message or "error" in message)) or "method" in message, raw
    answered = [json.loads(raw).get("id") for raw in lines if "id" in json.loads(raw)]
    assert answered == [1, 2, 3, 4, 5, 6], answered


def test_the_session_itself_worked(session: dict[str, Any]) -> None:
    assert session["initialized"]["result"]["serverInfo"]["name"] == "memtrove"
    names = {tool["name"] for tool in session["tools"]["result"]["tools"]}
    assert names == EXPECTED_TOOLS
    stored = session["stored"]["result"]
    assert not stored.get("isError"), stored
    assert stored["structuredContent"]["id"].startswith("mem_")
    assert session["refused"]["result"]["isError"] is True
    assert session["unknown"]["error"]["code"] == -32601
    assert session["missing"]["result"]["isError"] is True


def test_the_server_exits_cleanly_when_stdin_closes(session: dict[str, Any]) -> None:
    assert session["returncode"] == 0, session["stderr"]


def tool_call_lines(session: dict[str, Any]) -> list[str]:
    return [line for line in session["stderr"].splitlines() if "tool_call tool=memory_store" in line]


def test_stderr_logs_each_tool_call_with_latency(session: dict[str, Any]) -> None:
    calls = tool_call_lines(session)
    assert len(calls) >= 2, session["stderr"]
    assert all("latency_ms=" in line for line in calls), calls
    assert "status=ok" in calls[0] and "status=validation_error" in calls[1], calls


def test_stderr_logs_a_call_refused_for_a_missing_argument_too(session: dict[str, Any]) -> None:
    """One log line per call, whatever refused it (request 6 lacks ``content``)."""
    calls = tool_call_lines(session)
    assert len(calls) == 3, f"expected 3 memory_store tool_call lines (ok, refused, missing argument), got {calls}"
    assert "status=validation_error" in calls[2] and "latency_ms=" in calls[2], calls


def test_stderr_never_contains_the_stored_content(session: dict[str, Any]) -> None:
    stderr = session["stderr"]
    assert stderr.strip(), "no logs at all"
    for fragment in (SECRET, "Zanzibar-7731", "locker code"):
        assert fragment not in stderr, f"{fragment!r} leaked into the logs"
