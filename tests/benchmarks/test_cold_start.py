"""Cold start: process start to the answer of tools/list, over stdio, model not loaded."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.benchmarks.conftest import measure, percentiles, size
from tests.e2e.scenario import EXPECTED_TOOLS
from tests.support.mcp_procs import memtrove_command, server_env

HANDSHAKE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def start_to_tools_list(data_dir: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([*memtrove_command(), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=server_env(data_dir, {"MEMTROVE_WARMUP": "true"}))
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in HANDSHAKE).encode())
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            assert line, "server exited before answering tools/list"
            message = json.loads(line)
            if message.get("id") == 2:
                assert {t["name"] for t in message["result"]["tools"]} == EXPECTED_TOOLS
                return time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()


def test_cold_start_to_tools_list(benchmark, report, tmp_path: Path) -> None:
    start_to_tools_list(tmp_path)  # first start creates the stores; measure restarts of a real store
    samples = measure(benchmark, lambda: start_to_tools_list(tmp_path), size(10, 2))
    report(target_ms=1500, **percentiles(samples))
