"""The start settings a stdio start remembers per environment (entrypoints/start.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import load_settings
from entrypoints.answers import answers_key
from entrypoints.shared import data_dir_of, embedder_label
from entrypoints.start import recall, remember


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv("MEMTROVE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMTROVE_TOOLSETS", "core,sessions")
    monkeypatch.setenv("MEMTROVE_SHARED", "false")
    return monkeypatch


def test_a_start_in_the_same_environment_recalls_what_the_settings_gave(env: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    assert recall(tmp_path / "cache") is None
    settings = load_settings()
    remembered = remember(settings, tmp_path / "cache")
    recalled = recall(tmp_path / "cache")
    assert recalled == remembered
    assert recalled.data_path == data_dir_of(settings)
    assert recalled.embedder == embedder_label(settings)
    assert recalled.toolsets == ("core", "sessions")
    assert recalled.answers == answers_key(settings)
    assert (recalled.shared, recalled.transport) == (False, "stdio")


@pytest.mark.parametrize("name", ["MEMTROVE_TOOLSETS", "memtrove_embedder", "OPENAI_EMBED_DIMS", "XDG_DATA_HOME"])
def test_another_value_of_a_variable_the_settings_read_is_not_recalled(env: pytest.MonkeyPatch, tmp_path: Path,
                                                                      name: str) -> None:
    remember(load_settings(), tmp_path / "cache")
    env.setenv(name, "openai" if name == "memtrove_embedder" else "64" if name.endswith("DIMS") else "core")
    assert recall(tmp_path / "cache") is None


def test_a_variable_the_settings_do_not_read_does_not_matter(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    remembered = remember(load_settings(), tmp_path / "cache")
    env.setenv("SOMETHING_ELSE", "1")
    assert recall(tmp_path / "cache") == remembered


def test_a_damaged_record_is_no_record(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    remember(load_settings(), tmp_path / "cache")
    for record in (tmp_path / "cache").glob("start-*.json"):
        record.write_text('{"names": [')
    assert recall(tmp_path / "cache") is None


def test_another_data_dir_is_recalled_with_its_own_path(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    remembered = remember(load_settings(), tmp_path / "cache")
    env.setenv("MEMTROVE_DATA_DIR", str(tmp_path / "other"))
    recalled = recall(tmp_path / "cache")
    assert recalled is not None and recalled.data_path == data_dir_of(load_settings()) == tmp_path / "other"
    assert recalled.answers == remembered.answers
    env.delenv("MEMTROVE_DATA_DIR")  # the default data dir: another environment
    assert recall(tmp_path / "cache") is None
