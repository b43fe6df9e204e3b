"""The built-in privacy policy passes the contract every policy must; an allow-all one does not."""

from __future__ import annotations

import pytest

from plugins.privacy.allow_all import AllowAllPolicy
from plugins.privacy.clearance import ClearancePolicy
from plugins.privacy_testing import CALLERS, PrivacyPolicyContract, sample_hits


class TestClearancePolicy(PrivacyPolicyContract):
    @pytest.fixture
    def policy(self):
        return ClearancePolicy()


def test_the_contract_catches_a_policy_that_shows_too_much() -> None:
    """Allow-all returns highly_sensitive hits to a caller cleared for normal: the contract says so."""
    contract, policy = PrivacyPolicyContract(), AllowAllPolicy()
    with pytest.raises(AssertionError):
        contract.test_never_shows_more_than_the_callers_clearance(policy, CALLERS[0])
    assert len(policy.filter_hits(sample_hits(), CALLERS[0])) == len(sample_hits())
