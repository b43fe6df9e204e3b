"""Builds the plugin manager: built-ins from DEFAULT_PLUGINS, third parties from entry points."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import pluggy
from loguru import logger

from domain.errors import ConfigurationError
from domain.ports import Chunker, PrivacyPolicy
from plugins import hookspecs

DEFAULT_PLUGINS = (
    "plugins.chunkers.token_window",
    "plugins.privacy.allow_all",
)


@dataclass(frozen=True, slots=True)
class Registry:
    """What the plugins registered: chunkers by name, privacy policies in order."""

    chunkers: dict[str, Chunker]
    privacy_policies: tuple[PrivacyPolicy, ...]

    def chunker(self, name: str) -> Chunker:
        try:
            return self.chunkers[name]
        except KeyError:
            raise ConfigurationError(
                f"No chunker named {name!r}; available: {', '.join(sorted(self.chunkers))}"
            ) from None


def plugin_manager(load_entry_points: bool = True) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        pm.register(importlib.import_module(name), name=name)
    if load_entry_points:
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    pm.check_pending()
    return pm


def collect(pm: pluggy.PluginManager) -> Registry:
    chunkers: dict[str, Chunker] = {}
    policies: list[PrivacyPolicy] = []

    def add_chunker(chunker: Chunker) -> None:
        if chunker.name in chunkers:
            logger.warning("plugin_conflict kind=chunker name={} (first registration kept)", chunker.name)
            return
        chunkers[chunker.name] = chunker

    pm.hook.memtrove_register_chunkers(register=add_chunker)
    pm.hook.memtrove_register_privacy_policies(register=policies.append)
    return Registry(chunkers=chunkers, privacy_policies=tuple(policies))
