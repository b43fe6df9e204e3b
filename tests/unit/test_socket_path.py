"""Where a data dir's socket goes: inside it when the path fits a socket address, else a short per-user
path under $XDG_RUNTIME_DIR, else (none, or that too long as well) under the temporary folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from entrypoints.shared import MAX_SOCKET_PATH, SOCKET_NAME, socket_path


def test_a_short_data_dir_keeps_its_socket(tmp_path: Path) -> None:
    data = Path("/srv/m/data")
    assert socket_path(data) == data / SOCKET_NAME


def test_a_deep_data_dir_uses_the_runtime_dir_or_the_temporary_folder(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    deep = Path("/srv") / ("d" * 120) / "data"
    short = tmp_path.parent / "r"
    short.mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short))
    if len(os.fsencode(short / "memtrove" / ("x" * 24 + ".sock"))) <= MAX_SOCKET_PATH:
        assert socket_path(deep).parent == short / "memtrove"
    long = tmp_path / ("r" * 90)
    long.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long))
    fallback = socket_path(deep)
    assert fallback.parent == Path(tempfile.gettempdir()) / f"memtrove-{os.getuid()}"
    assert len(os.fsencode(fallback)) <= MAX_SOCKET_PATH
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert socket_path(deep) == fallback  # the same path whichever way it was reached
