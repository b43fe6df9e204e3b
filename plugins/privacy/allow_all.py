"""The allow-all privacy policy (spec v2 behaviour): privacy fields are stored, not enforced."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.model import Hit, RequestContext
from domain.ports import PrivacyPolicy
from plugins.hookspecs import hookimpl


class AllowAllPolicy(PrivacyPolicy):
    name = "allow-all"

    def filter_hits(self, hits: Sequence[Hit], context: RequestContext) -> list[Hit]:
        return list(hits)


@hookimpl
def memtrove_register_privacy_policies(register: Callable[[PrivacyPolicy], None]) -> None:
    register(AllowAllPolicy())
