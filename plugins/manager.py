"""Builds the plugin manager: built-ins from DEFAULT_PLUGINS, third parties from entry points.

A third-party plugin loads only when MEMTROVE_PLUGINS names it (or is "*"). A plugin that fails to
import, raises in its hook, or registers something that is not a chunker is reported once, with
its name, and skipped: it never stops the server. A chunker that later raises or cuts a text
wrong is reported once and skipped from then on (the ingest falls back to token-window).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

import pluggy
from loguru import logger

from domain.errors import ConfigurationError
from domain.graph.extraction import Extractor
from domain.ports import Chunker, ChunkerCatalog, PrivacyPolicy
from plugins import hookspecs

DEFAULT_PLUGINS = (
    "plugins.chunkers.token_window",
    "plugins.chunkers.markdown",
    "plugins.chunkers.rst",
    "plugins.chunkers.email",
    "plugins.chunkers.chat",
    "plugins.chunkers.code",
    "plugins.chunkers.code_tree",
    "plugins.privacy.clearance",
    "plugins.extractors.spacy_rules",
    "plugins.extractors.llm",
)


class Registry(ChunkerCatalog):
    """What the plugins registered: chunkers by name (minus broken ones), privacy policies in order."""

    def __init__(self, chunkers: dict[str, Chunker], privacy_policies: tuple[PrivacyPolicy, ...],
                 owners: dict[str, str] | None = None, extractors: dict[str, Extractor] | None = None) -> None:
        self.chunkers = chunkers
        self.extractors = extractors or {}
        self.privacy_policies = privacy_policies
        self.owners = owners or {}
        self.broken: dict[str, str] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        with self._lock:
            return sorted(n for n in self.chunkers if n not in self.broken)

    def get(self, name: str) -> Chunker | None:
        with self._lock:
            return None if name in self.broken else self.chunkers.get(name)

    def report_broken(self, name: str, problem: str) -> None:
        with self._lock:
            if name in self.broken:
                return
            self.broken[name] = problem
        logger.error("chunker_broken name={} plugin={} problem={} (skipped from now on)", name,
                     self.owners.get(name, "?"), problem)

    def chunker(self, name: str) -> Chunker:
        found = self.get(name)
        if found is None:
            raise ConfigurationError(f"No chunker named {name!r}; available: {', '.join(self.names())}")
        return found


def plugin_manager(allowed: Collection[str] = (), load_entry_points: bool = True) -> pluggy.PluginManager:
    """Built-ins, then the entry-point plugins ``allowed`` names ("*": all of them)."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in DEFAULT_PLUGINS:
        _register(pm, name, lambda name=name: importlib.import_module(name))
    if load_entry_points:
        for entry in importlib.metadata.entry_points(group=hookspecs.PROJECT):
            if "*" not in allowed and entry.name not in allowed:
                logger.info("plugin_not_loaded name={} (not in MEMTROVE_PLUGINS)", entry.name)
                continue
            _register(pm, entry.name, entry.load)
    return pm


def _register(pm: pluggy.PluginManager, name: str, load: Callable[[], Any]) -> None:
    try:
        pm.register(load(), name=name)
        pm.check_pending()
    except Exception as exc:  # an import error or a bad hook: this plugin only
        plugin = pm.get_plugin(name)
        if plugin is not None:
            pm.unregister(plugin)
        logger.error("plugin_broken name={} error={}: {} (skipped)", name, type(exc).__name__, exc)
        pm.broken = {**getattr(pm, "broken", {}), name: f"{type(exc).__name__}: {exc}"}  # type: ignore[attr-defined]
        return
    logger.info("plugin_loaded name={}", name)


def collect(pm: pluggy.PluginManager, required_policies: Collection[str] = (),
            extractor_options: Mapping[str, Any] | None = None) -> Registry:
    """Call each plugin's hooks on its own: one that raises, or registers a non-chunker, loses only
    its own registrations."""
    chunkers: dict[str, Chunker] = {}
    owners: dict[str, str] = {}
    for impl in pm.hook.memtrove_register_chunkers.get_hookimpls():
        offered = _call(impl)
        wrong = [c for c in offered if not _is_chunker(c)]
        if wrong:
            logger.error("plugin_broken name={} error=registered something that is not a chunker (needs str "
                         "name, str version, chunk()): {!r} (its registrations are skipped)", impl.plugin_name, wrong[0])
            continue
        for chunker in offered:
            if chunker.name in chunkers:
                logger.warning("plugin_conflict kind=chunker name={} plugin={} (the first, from {}, is kept)",
                               chunker.name, impl.plugin_name, owners[chunker.name])
                continue
            chunkers[chunker.name] = chunker
            owners[chunker.name] = impl.plugin_name
    return Registry(chunkers, privacy_policies(pm, required_policies), owners,
                    extractors(pm, extractor_options or {}))


def extractors(pm: pluggy.PluginManager, options: Mapping[str, Any]) -> dict[str, Extractor]:
    """Every registered extractor by name (the first of a name kept); a plugin that raises or registers
    something that is not an extractor loses its registrations, reported with its name."""
    found: dict[str, Extractor] = {}
    for impl in pm.hook.memtrove_register_extractors.get_hookimpls():
        offered: list[Any] = []
        try:
            impl.function(**{k: v for k, v in (("register", offered.append), ("options", options))
                             if k in impl.argnames})
        except Exception as exc:
            logger.error("plugin_broken name={} hook=memtrove_register_extractors error={}: {}", impl.plugin_name,
                         type(exc).__name__, exc)
            continue
        if any(not isinstance(e, Extractor) or not isinstance(getattr(e, "name", None), str) for e in offered):
            logger.error("plugin_broken name={} error=registered something that is not an extractor", impl.plugin_name)
            continue
        for extractor in offered:
            found.setdefault(extractor.name, extractor)
    return found


def privacy_policies(pm: pluggy.PluginManager, required: Collection[str] = ()) -> tuple[PrivacyPolicy, ...]:
    """Every registered privacy policy; fails closed: a policy plugin whose hook raises or registers
    something that is not a policy, or a ``required`` policy (MEMTROVE_PRIVACY_POLICIES) that did not
    load, stops the server with a message naming it (never allow-all by accident)."""
    policies: list[PrivacyPolicy] = []
    for impl in pm.hook.memtrove_register_privacy_policies.get_hookimpls():
        offered: list[Any] = []
        try:
            impl.function(register=offered.append)
        except Exception as exc:
            raise ConfigurationError(f"Privacy policy plugin {impl.plugin_name!r} failed to register its policies "
                                     f"({type(exc).__name__}: {exc}); refusing to serve without them") from exc
        wrong = [p for p in offered if not isinstance(p, PrivacyPolicy) or not isinstance(getattr(p, "name", None), str)]
        if wrong:
            raise ConfigurationError(f"Privacy policy plugin {impl.plugin_name!r} registered something that is not a "
                                     f"privacy policy (needs name and filter_hits): {wrong[0]!r}")
        policies += offered
    missing = sorted(set(required) - {p.name for p in policies})
    if missing:
        broken = ", ".join(sorted(pm.broken)) if getattr(pm, "broken", None) else "none"
        raise ConfigurationError(f"Invalid setting MEMTROVE_PRIVACY_POLICIES: {', '.join(missing)} not loaded "
                                 f"(loaded: {', '.join(p.name for p in policies) or 'none'}; plugins that failed to "
                                 f"load: {broken}); refusing to serve without them")
    return tuple(policies)


def _is_chunker(candidate: Any) -> bool:
    name, version = getattr(candidate, "name", None), getattr(candidate, "version", None)
    return (isinstance(name, str) and bool(name) and isinstance(version, str) and bool(version)
            and callable(getattr(candidate, "chunk", None)))


def _call(impl: Any) -> list[Any]:
    """What one plugin's hook registers; nothing when it raises (reported with the plugin's name)."""
    offered: list[Any] = []
    try:
        impl.function(register=offered.append)
    except Exception as exc:
        logger.error("plugin_broken name={} hook={} error={}: {} (its registrations are skipped)",
                     impl.plugin_name, impl.function.__name__, type(exc).__name__, exc)
        return []
    return offered
