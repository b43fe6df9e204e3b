"""What a caller asks of an item it writes: spec 000's privacy fields (defaults as there), the
principals of a ``custom`` audience and the days of a ``custom`` retention; checked before any work,
then turned into the item's owner, access keys and expiry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from domain.access.principal import RequestContext
from domain.access.rules import expiry, owned
from domain.model import RETENTION_POLICIES, SENSITIVITIES, VISIBILITY_SCOPES
from domain.validation import require_choice


@dataclass(frozen=True, slots=True)
class Privacy:
    sensitivity: str = "normal"
    visibility_scope: str = "me"
    retention_policy: str = "forever"
    visible_to: Sequence[str] | None = None  # visibility custom: user ids and team:<name> entries
    retention_days: int | None = None  # retention custom: days after the item's timestamp

    def checked(self) -> dict[str, Any]:
        """The three spec fields, validated (the field named in any error), with retention_days checked."""
        fields = {
            "sensitivity": require_choice("sensitivity", self.sensitivity, SENSITIVITIES),
            "visibility_scope": require_choice("visibility_scope", self.visibility_scope, VISIBILITY_SCOPES),
            "retention_policy": require_choice("retention_policy", self.retention_policy, RETENTION_POLICIES),
        }
        expiry(fields["retention_policy"], 0.0, self.retention_days)
        return fields

    def fields(self, context: RequestContext, ts_epoch: float) -> dict[str, Any]:
        """An item's access fields (``domain.model.Owned``) when ``context`` writes it at ``ts_epoch``."""
        fields = self.checked()
        return {**fields, **owned(context, fields["visibility_scope"], self.visible_to),
                "expires_epoch": expiry(fields["retention_policy"], ts_epoch, self.retention_days)}


def audience(item: Any) -> tuple[Any, ...]:
    """Who may see an item, as one comparable value: items with the same one share their words as
    each other's context (neighbouring turns), and no others."""
    return (*sorted(item.acl), item.sensitivity)
