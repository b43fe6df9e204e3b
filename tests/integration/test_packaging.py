"""What a user installs and reads: the compose file validates, every setting is documented."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_docker_compose_file_validates() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed (./scripts/test installs it with apt-get as root)")
    env = {**os.environ, "MEMTROVE_HTTP_TOKEN": "compose-check"}
    result = subprocess.run(["docker-compose", "config"], cwd=ROOT, capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "memtrove" in result.stdout and "chroma" in result.stdout and "CHROMA_HOST: chroma" in result.stdout


def test_compose_refuses_to_start_without_a_token() -> None:
    if shutil.which("docker-compose") is None:
        pytest.skip("docker-compose is not installed")
    env = {k: v for k, v in os.environ.items() if k != "MEMTROVE_HTTP_TOKEN"}
    result = subprocess.run(["docker-compose", "config"], cwd=ROOT, capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode != 0 and "MEMTROVE_HTTP_TOKEN" in result.stderr


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [name.upper() for name in Settings.model_fields if f"`{name.upper()}`" not in readme]
    assert missing == []


def test_console_script_runs() -> None:
    script = Path(sys.executable).with_name("memtrove")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "serve" in result.stdout
