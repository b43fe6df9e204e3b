"""PrivacyPolicyContract: what every memtrove privacy policy must do, for plugin authors and built-ins.

    from plugins.privacy_testing import PrivacyPolicyContract

    class TestMyPolicy(PrivacyPolicyContract):
        @pytest.fixture
        def policy(self):
            return MyPolicy()

A policy only takes away: it returns some of the hits it is given, unchanged and in their order; it
decides each hit on its own (the same hit is kept or withheld whatever else is in the list, so a
single-item read and a search agree); it is deterministic, leaves its input alone, and never lets a
caller see more than its clearance (memtrove enforces that too; a policy must not contradict it).
"""

from __future__ import annotations

import copy
import itertools

import pytest

from domain.access.principal import SENSITIVITIES, Principal, RequestContext
from domain.model import Hit
from domain.ports import PrivacyPolicy

CALLERS = [RequestContext(Principal("alice", teams=("eng",), org="acme", clearance=c)) for c in SENSITIVITIES] + [
    RequestContext(Principal("local", clearance="sensitive")),
    RequestContext(Principal("bob", projects=("web",))),
]


def sample_hits() -> list[Hit]:
    """Hits of every kind, sensitivity and visibility, as the search paths hand them to policies."""
    hits = []
    for n, (kind, sensitivity, visibility) in enumerate(itertools.product(
            ("memory", "history", "artifact", "chunk"), SENSITIVITIES, ("me", "team", "org", "custom"))):
        fields = {"provenance": {"owner": ["alice", "bob", "local"][n % 3], "ts": "2026-01-01T00:00:00Z"},
                  "sensitivity": sensitivity, "visibility_scope": visibility}
        if kind in ("artifact", "chunk"):
            fields["artifact_id"] = f"art_{n:032x}"
        hits.append(Hit(f"{kind}_{n}", kind, 1.0 / (n + 1), f"text {n}", fields))
    return hits


class PrivacyPolicyContract:
    """Subclass as ``Test<Name>`` and provide a ``policy`` fixture."""

    @pytest.fixture
    def policy(self) -> PrivacyPolicy:
        raise NotImplementedError

    def test_names_itself(self, policy: PrivacyPolicy) -> None:
        assert isinstance(policy, PrivacyPolicy)
        assert isinstance(policy.name, str) and policy.name and policy.name.strip() == policy.name

    @pytest.mark.parametrize("context", CALLERS, ids=lambda c: f"{c.actor}-{c.principal.clearance}")
    def test_returns_some_of_the_hits_unchanged_and_in_order(self, policy: PrivacyPolicy,
                                                             context: RequestContext) -> None:
        hits = sample_hits()
        kept = list(policy.filter_hits(hits, context))
        positions = [next(i for i, h in enumerate(hits) if h is k or h == k) for k in kept]
        assert positions == sorted(set(positions)), "a policy returns a sub-sequence of its input, in order"
        assert all(k == hits[p] for k, p in zip(kept, positions)), "a kept hit is returned unchanged"

    @pytest.mark.parametrize("context", CALLERS, ids=lambda c: f"{c.actor}-{c.principal.clearance}")
    def test_decides_each_hit_on_its_own(self, policy: PrivacyPolicy, context: RequestContext) -> None:
        hits = sample_hits()
        together = {h.id for h in policy.filter_hits(hits, context)}
        alone = {h.id for h in hits if list(policy.filter_hits([h], context))}
        assert together == alone, "a hit's fate must not depend on the other hits"

    @pytest.mark.parametrize("context", CALLERS, ids=lambda c: f"{c.actor}-{c.principal.clearance}")
    def test_is_deterministic_and_leaves_its_input_alone(self, policy: PrivacyPolicy, context: RequestContext) -> None:
        hits = sample_hits()
        before = copy.deepcopy(hits)
        first = [h.id for h in policy.filter_hits(hits, context)]
        assert hits == before, "the input list and its hits are left as they were"
        assert [h.id for h in policy.filter_hits(hits, context)] == first

    def test_empty_in_empty_out(self, policy: PrivacyPolicy) -> None:
        assert list(policy.filter_hits([], CALLERS[0])) == []

    @pytest.mark.parametrize("context", CALLERS, ids=lambda c: f"{c.actor}-{c.principal.clearance}")
    def test_never_shows_more_than_the_callers_clearance(self, policy: PrivacyPolicy,
                                                         context: RequestContext) -> None:
        kept = policy.filter_hits(sample_hits(), context)
        assert all(context.principal.may_read(h.fields["sensitivity"]) for h in kept)
