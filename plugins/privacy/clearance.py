"""The built-in privacy policy: a hit above the caller's clearance is withheld.

The engine already holds every read to the access rule (domain/access/rules.py, inside the index
queries and on the rows); a policy is a further restriction on what is returned. This one repeats the
clearance part of the rule on the hits themselves, and is what PrivacyPolicyContract is proven on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.model import Hit, RequestContext
from domain.ports import PrivacyPolicy
from plugins.hookspecs import hookimpl


class ClearancePolicy(PrivacyPolicy):
    name = "clearance"

    def filter_hits(self, hits: Sequence[Hit], context: RequestContext) -> list[Hit]:
        return [h for h in hits if context.principal.may_read(str(h.fields.get("sensitivity") or "normal"))]


@hookimpl
def memtrove_register_privacy_policies(register: Callable[[PrivacyPolicy], None]) -> None:
    register(ClearancePolicy())
