"""The architecture holds: import-linter contracts pass and our packages are this repository's."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("package", ["domain", "adapters", "plugins", "config", "entrypoints"])
def test_top_level_packages_resolve_to_this_repository(package: str) -> None:
    module = importlib.import_module(package)
    assert Path(module.__file__).resolve().parent == ROOT / package
