"""The plugin manager registers the built-ins from one list and checks hook names."""

from __future__ import annotations

import pluggy
import pytest

from plugins.hookspecs import hookimpl
from plugins.manager import DEFAULT_PLUGINS, collect, plugin_manager


def test_built_ins_are_registered() -> None:
    registry = collect(plugin_manager(load_entry_points=False))
    assert "token-window" in registry.chunkers
    assert [p.name for p in registry.privacy_policies] == ["allow-all"]
    assert len(DEFAULT_PLUGINS) == 2


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
