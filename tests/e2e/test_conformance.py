"""The official MCP conformance suite's generic server scenarios pass against our HTTP server."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.mcp_procs import http_server

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "conformance.sh"
SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite_installed() -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: the conformance suite (Node 22 from npm) cannot be installed")
    installed = subprocess.run([str(SCRIPT), "--install-only"], capture_output=True, text=True, timeout=600)
    if installed.returncode != 0:
        pytest.skip(f"conformance suite could not be installed: {installed.stderr[-500:]}")


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
def test_generic_server_scenarios_pass(suite_installed: None, tmp_path: Path, path: str) -> None:
    """At /mcp (the documented URL) and at /mcp/: neither may answer with a redirect."""
    with http_server(tmp_path / "data", {"MEMTROVE_SHARED": "false"}) as server:
        result = subprocess.run([str(SCRIPT), server.base_url + path, *SCENARIOS], capture_output=True, text=True,
                                timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for scenario in SCENARIOS:
        assert any(line.startswith("PASS") and scenario in line for line in result.stdout.splitlines()), result.stdout
