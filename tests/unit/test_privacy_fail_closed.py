"""Privacy policies fail closed: a policy plugin that breaks, or a required policy that is missing, stops
the server; a policy that raises during a read fails that read instead of returning unfiltered hits."""

from __future__ import annotations

import pluggy
import pytest

from domain.access.principal import RequestContext
from domain.common import apply_policies
from domain.errors import ConfigurationError, StorageError
from domain.model import Hit
from plugins import hookspecs
from plugins.manager import collect, plugin_manager
from plugins.privacy.clearance import ClearancePolicy


class Raising:
    @hookspecs.hookimpl
    def memtrove_register_privacy_policies(self, register):
        raise RuntimeError("policy database unreachable")


class NotAPolicy:
    @hookspecs.hookimpl
    def memtrove_register_privacy_policies(self, register):
        register(object())


def manager_with(plugin: object) -> pluggy.PluginManager:
    pm = plugin_manager(load_entry_points=False)
    pm.register(plugin, name="acme-policy")
    return pm


def test_the_built_in_policy_is_in_force_by_default() -> None:
    assert [p.name for p in collect(plugin_manager(load_entry_points=False)).privacy_policies] == ["clearance"]


@pytest.mark.parametrize("plugin", [Raising(), NotAPolicy()], ids=["raises", "not-a-policy"])
def test_a_broken_policy_plugin_stops_the_server(plugin: object) -> None:
    with pytest.raises(ConfigurationError, match="acme-policy"):
        collect(manager_with(plugin))


def test_a_required_policy_that_did_not_load_stops_the_server() -> None:
    with pytest.raises(ConfigurationError, match="MEMTROVE_PRIVACY_POLICIES: acme-acl not loaded"):
        collect(plugin_manager(load_entry_points=False), required_policies=("acme-acl",))
    assert collect(plugin_manager(load_entry_points=False), required_policies=("clearance",)).privacy_policies


def test_a_policy_that_raises_fails_the_read() -> None:
    class Broken:
        name = "broken"

        def filter_hits(self, hits, context):
            raise KeyError("acl")

    hits = [Hit("m1", "memory", 1.0, "x", {"sensitivity": "normal"})]
    with pytest.raises(StorageError, match="'broken' failed"):
        apply_policies([ClearancePolicy(), Broken()], hits, RequestContext())
