"""``memtrove serve`` and ``./scripts/serve`` run in a terminal (a pseudo-terminal as stdin, as a person
runs them): one line on stderr says they speak MCP, how to connect a client and how to quit; stdout stays
empty (it is the protocol's); Ctrl-D ends them. A client's pipes get no such line."""

from __future__ import annotations

import hashlib
import os
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import memtrove_command, run_cli, server_env, stop_owner

pytestmark = pytest.mark.slow

DIMS = 32


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


def shared_env(fake: QuickFakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "120", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS), **extra}


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    yield data
    stop_owner(data)


def test_serve_in_a_terminal_says_what_it_waits_for_on_stderr_only(fake: QuickFakeOpenAIServer, tmp_path: Path,
                                                                   data_dir: Path) -> None:
    cache = tmp_path / "cache"  # the first start loads the settings, the second reads what the first recorded
    for shared in ("true", "true", "false"):
        code, out, err = in_a_terminal([*memtrove_command(), "serve"],
                                       server_env(data_dir, shared_env(fake, MEMTROVE_SHARED=shared,
                                                                       XDG_CACHE_HOME=str(cache))))
        assert (code, out) == (0, b""), (shared, code, out, err)
        hint = [line for line in err.splitlines() if "serving MCP on stdin/stdout" in line]
        assert len(hint) == 1 and "Ctrl-D" in hint[0] and "claude mcp add memtrove" in hint[0], err
        assert " ui`" in hint[0], err
    piped = run_cli(["serve"], data_dir, shared_env(fake, XDG_CACHE_HOME=str(cache)))
    assert piped.returncode == 0 and "serving MCP" not in piped.stderr, piped  # a client's pipes: no hint


def test_scripts_serve_in_a_terminal_says_what_it_waits_for(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    stamp = root / ".venv" / ".memtrove-installed"
    current = hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or not stamp.read_text().startswith(current):
        pytest.skip("./scripts/serve would install first (the .venv is not this pyproject.toml's)")
    code, out, err = in_a_terminal([str(root / "scripts" / "serve")], server_env(data_dir, shared_env(fake)))
    assert (code, out) == (0, b""), (code, out, err)
    assert sum("serving MCP on stdin/stdout" in line for line in err.splitlines()) == 1, err


def in_a_terminal(command: list[str], env: dict[str, str], timeout: float = 60.0) -> tuple[int, bytes, str]:
    """Run ``command`` with a pseudo-terminal as stdin, as a person would; type Ctrl-D once it has said
    what it waits for on stderr (or after ``timeout``). Its exit code, stdout and stderr."""
    master, terminal = os.openpty()
    process = subprocess.Popen(command, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    os.close(terminal)
    try:
        assert process.stderr is not None
        said = b""
        deadline = time.monotonic() + timeout
        while b"Ctrl-D" not in said and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stderr], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(process.stderr.fileno(), 65536) if ready else b""
            if ready and not chunk:
                break  # it ended
            said += chunk
        os.write(master, b"\x04")  # Ctrl-D: the end of input
        out, rest = process.communicate(timeout=timeout)
        return process.returncode, out, (said + rest).decode("utf-8", "replace")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
