"""What a caller asks of an item it writes: spec 000's privacy fields (defaults as there), the
principals of a ``custom`` audience and the days of a ``custom`` retention; checked before any work,
then turned into the item's owner, access keys and expiry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.access.principal import LOCAL_USER, RequestContext
from domain.access.rules import custom_keys, days, expiry, owned
from domain.errors import ValidationError
from domain.model import RETENTION_POLICIES, SENSITIVITIES, VISIBILITY_SCOPES
from domain.validation import epoch, iso, require_choice


@dataclass(frozen=True, slots=True)
class Privacy:
    sensitivity: str = "normal"
    visibility_scope: str = "me"
    retention_policy: str = "forever"
    visible_to: Sequence[str] | None = None  # visibility custom: user ids and team:<name> entries
    retention_days: int | None = None  # retention custom: days after the item's timestamp

    def checked(self) -> dict[str, Any]:
        """The three spec fields, validated (the field named in any error). ``visible_to`` and
        ``retention_days`` are checked whatever the others say, and refused where they would do nothing:
        a field the others make meaningless is a caller's mistake, not something to drop silently."""
        fields = {
            "sensitivity": require_choice("sensitivity", self.sensitivity, SENSITIVITIES),
            "visibility_scope": require_choice("visibility_scope", self.visibility_scope, VISIBILITY_SCOPES),
            "retention_policy": require_choice("retention_policy", self.retention_policy, RETENTION_POLICIES),
        }
        custom_keys(self.visible_to)
        if self.visible_to and fields["visibility_scope"] != "custom":  # [] names nobody: as if left out
            raise ValidationError("visible_to", f"visible_to needs visibility_scope=custom (got visibility_scope="
                                                f"{fields['visibility_scope']}): leave visible_to out or set both")
        if self.retention_days is not None:
            days(self.retention_days)
            if fields["retention_policy"] != "custom":
                raise ValidationError("retention_days", f"retention_days needs retention_policy=custom (got "
                                                        f"retention_policy={fields['retention_policy']}): leave "
                                                        f"retention_days out or set both")
        # custom without visible_to (only its owner) or without retention_days (kept) is spec 000's own
        # custom, whose rule it defers: accepted, and the answer shows who reads it and when it expires.
        return fields

    def fields(self, context: RequestContext, ts_epoch: float) -> dict[str, Any]:
        """An item's access fields (``domain.model.Owned``) when ``context`` writes it at ``ts_epoch``."""
        fields = self.checked()
        return {**fields, **owned(context, fields["visibility_scope"], self.visible_to),
                "expires_epoch": expiry(fields["retention_policy"], ts_epoch, self.retention_days)}

    def written(self, context: RequestContext, ts_epoch: float, now: float) -> dict[str, Any]:
        """``fields`` of an item somebody can read once written: see ``check_readable``."""
        fields = self.fields(context, ts_epoch)
        check_readable(context, fields, ts_epoch, now, self.retention_days)
        return fields


def check_readable(context: RequestContext, fields: Mapping[str, Any], ts_epoch: float, now: float,
                   retention_days: object = None) -> None:
    """Refuse a write nobody could read (``fields``: its sensitivity, acl and retention_policy): expired
    before it is written, or above its writer's clearance with nobody else in its audience. Stored, it
    would answer 'stored' and then 'not found'.

    Writing above one's clearance for a wider audience (a team, an org, named readers) is allowed, as
    in any clearance scheme ("write up"); the answer then says who can read it (``readers``)."""
    principal, sensitivity = context.principal, fields["sensitivity"]
    if not principal.may_read(sensitivity) and set(fields["acl"]) <= {f"u:{principal.user_id}"}:
        local = ", or raise MEMTROVE_LOCAL_CLEARANCE (the local owner's)" if principal.user_id == LOCAL_USER else ""
        raise ValidationError("sensitivity", f"sensitivity {sensitivity} is above your clearance "
                                             f"({principal.clearance}) and only you may read it: nobody could read "
                                             f"it back, so nothing was stored. Use "
                                             f"{' or '.join(principal.sensitivities())}, open it to readers cleared "
                                             f"for {sensitivity} (visibility_scope team, org or custom){local}")
    policy = fields["retention_policy"]
    expires = expiry(policy, ts_epoch, retention_days)
    if expires <= now:
        kept = f"retention_policy {policy}" + (f" and retention_days {retention_days}" if policy == "custom" else "")
        raise ValidationError("ts", f"ts {iso(ts_epoch)} with {kept} expired at {iso(expires)}, before now: the "
                                    f"item would be gone as soon as it is written, so nothing was stored. Give a "
                                    f"later ts or a longer retention")


def kept_as_asked(existing: Any, fields: dict[str, Any], retention_days: int | None, now: float) -> bool:
    """Whether the stored artifact already has the privacy a new ingest asks for, and is readable now."""
    ts = epoch(fields["ts"] or existing.ts)
    asked = (fields["sensitivity"], fields["visibility_scope"], fields["retention_policy"], tuple(fields["acl"]),
             expiry(fields["retention_policy"], ts, retention_days))
    return existing.expires_epoch > now and asked == (existing.sensitivity, existing.visibility_scope,
                                                      existing.retention_policy, tuple(existing.acl),
                                                      existing.expires_epoch)


def audience(item: Any) -> tuple[Any, ...]:
    """Who may see an item, as one comparable value: items with the same one share their words as
    each other's context (neighbouring turns), and no others."""
    return (*sorted(item.acl), item.sensitivity)
