"""The plugin manager registers the built-ins from one list and checks hook names."""

from __future__ import annotations

import pluggy
import pytest

from plugins.hookspecs import hookimpl
from plugins.manager import DEFAULT_PLUGINS, collect, plugin_manager


def test_built_ins_are_registered() -> None:
    registry = collect(plugin_manager(load_entry_points=False))
    assert registry.names() == ["chat", "code", "code-c", "code-cpp", "code-go", "code-java", "code-javascript",
                                "code-rust", "code-tsx", "code-typescript", "email", "markdown", "rst", "token-window"]
    assert [p.name for p in registry.privacy_policies] == ["clearance"]
    assert list(registry.extractors) == ["spacy"]  # "llm" only with a chat model configured
    assert len(DEFAULT_PLUGINS) == 10


def test_a_third_party_chunker_registers_through_the_same_hook() -> None:
    class Upper:
        name, version = "upper", "1"

        def chunk(self, text, spec, tokenizer):
            return []

    class Plugin:
        @hookimpl
        def memtrove_register_chunkers(self, register):
            register(Upper())

    pm = plugin_manager(load_entry_points=False)
    pm.register(Plugin())
    assert isinstance(collect(pm).chunker("upper"), Upper)


def test_a_misspelled_hook_is_caught() -> None:
    class Typo:
        @hookimpl
        def memtrove_register_chunker(self, register):  # missing "s"
            pass

    pm = plugin_manager(load_entry_points=False)
    pm.register(Typo())
    with pytest.raises(pluggy.PluginValidationError):
        pm.check_pending()


def test_unknown_chunker_names_the_choices() -> None:
    registry = collect(plugin_manager(load_entry_points=False))
    with pytest.raises(Exception, match="token-window"):
        registry.chunker("nope")


class _EntryPoint:
    """Stands in for an importlib.metadata entry point of the ``memtrove`` group."""

    def __init__(self, name, load):
        self.name, self._load = name, load

    def load(self):
        return self._load()


def _good_plugin():
    class Words:
        name, version = "words", "1"

        def chunk(self, text, spec, tokenizer):
            return []

    class Plugin:
        @hookimpl
        def memtrove_register_chunkers(self, register):
            register(Words())
    return Plugin()


def _raising_plugin():
    class Plugin:
        @hookimpl
        def memtrove_register_chunkers(self, register):
            register(object.__new__(type("Half", (), {"name": "half", "version": "1", "chunk": lambda *a: []})))
            raise RuntimeError("hook exploded")
    return Plugin()


def _not_a_chunker_plugin():
    class Plugin:
        @hookimpl
        def memtrove_register_chunkers(self, register):
            register("i am a string")
    return Plugin()


def _import_error():
    raise ImportError("No module named 'missing_dependency'")


@pytest.fixture
def entry_points(monkeypatch):
    points = [_EntryPoint("good", _good_plugin), _EntryPoint("broken-import", _import_error),
              _EntryPoint("raising", _raising_plugin), _EntryPoint("not-a-chunker", _not_a_chunker_plugin),
              _EntryPoint("unlisted", _good_plugin)]
    monkeypatch.setattr("plugins.manager.importlib.metadata.entry_points", lambda group: points)
    return points


def test_third_party_plugins_load_only_when_allowed(entry_points) -> None:
    assert "words" not in collect(plugin_manager(allowed=())).names()
    assert "words" in collect(plugin_manager(allowed=("good",))).names()
    assert "words" in collect(plugin_manager(allowed=("*",))).names()


def test_broken_plugins_are_reported_once_by_name_and_skipped(entry_points) -> None:
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lines.append, format="{message}")
    try:
        registry = collect(plugin_manager(allowed=("good", "broken-import", "raising", "not-a-chunker")))
    finally:
        logger.remove(sink)
    assert "words" in registry.names() and "token-window" in registry.names()
    assert "half" not in registry.names()  # what a raising hook registered before it raised is dropped
    text = "".join(lines)
    for name in ("broken-import", "raising", "not-a-chunker"):
        assert sum(f"plugin_broken name={name}" in line for line in lines) == 1, text
    assert "missing_dependency" in text and "hook exploded" in text


def test_the_example_plugin_package_is_found_through_its_entry_point() -> None:
    """plugins/examples/memtrove-sentences, pip-installed by scripts/test like any third-party package."""
    import importlib.metadata

    assert any(e.name == "sentences" for e in importlib.metadata.entry_points(group="memtrove")), \
        "pip install ./plugins/examples/memtrove-sentences (scripts/test does)"
    assert "sentences" not in collect(plugin_manager(allowed=())).names()
    registry = collect(plugin_manager(allowed=("sentences",)))
    assert registry.get("sentences").name == "sentences" and registry.owners["sentences"] == "sentences"
