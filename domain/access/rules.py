"""What a caller may see (spec 000 §5.4): the owner and whom the owner opened an item to, up to the
caller's clearance, until the item expires.

Every item carries its audience as access keys: ``u:<user>`` (the owner, always), ``t:<team>`` (the
owner's teams, visibility ``team``), ``o:<org>`` (visibility ``org``), and for ``custom`` the
principals and teams listed (``alice``, ``team:eng``). A caller sees an item when one of its own keys
(Principal.audience) is among them, its clearance reaches the item's sensitivity, and the item has
not expired. The same rule runs as an index filter (``access_filter``: inside both indexes, so a
search fills its limit with what the caller may see) and on single items (``visible``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from domain.access.principal import LOCAL_USER, Principal, RequestContext, check_name
from domain.errors import ValidationError

ACL_PREFIX = "acl:"  # an access key in index metadata: "acl:<key>": True (indexes filter on scalar fields)
NEVER = 9.0e15  # expires_epoch of an item that does not expire (a number, so range filters apply)
MAX_VISIBLE_TO = 50
NOT_VISIBLE = "not visible to the caller"  # a denial's reason, audited; the caller is told "not found"


def audience_keys(owner: Principal, visibility: str, custom: Sequence[str] = ()) -> tuple[str, ...]:
    """The access keys of an item ``owner`` writes with this visibility (``custom``: the keys
    ``custom_keys`` made of its ``visible_to``)."""
    keys = {f"u:{owner.user_id}"}
    if visibility == "team":
        keys |= {f"t:{team}" for team in owner.teams}
    elif visibility == "org" and owner.org:
        keys.add(f"o:{owner.org}")
    elif visibility == "custom":
        keys |= set(custom)
    return tuple(sorted(keys))


def custom_keys(visible_to: object, field: str = "visible_to") -> tuple[str, ...]:
    """``visible_to`` of a custom item: user ids and ``team:<name>`` entries, as access keys."""
    if visible_to is None:
        return ()
    if not isinstance(visible_to, list) or not all(isinstance(v, str) for v in visible_to):
        raise ValidationError(field, f"{field} must be a list of user ids and team:<name> entries")
    if len(visible_to) > MAX_VISIBLE_TO:
        raise ValidationError(field, f"{field} allows at most {MAX_VISIBLE_TO} entries (got {len(visible_to)})")
    return tuple(sorted({f"t:{check_name(field, v[5:])}" if v.startswith("team:") else f"u:{check_name(field, v)}"
                         for v in visible_to}))


_KEY_WORDS = {"u": "{}", "t": "team {}", "o": "org {}", "p": "project {}"}


def readers(acl: Iterable[str], sensitivity: str, context: RequestContext) -> str:
    """Who may read an item, in words: 'you, team eng, org acme (cleared for sensitive)'; the caller is
    named only when cleared for it."""
    mine = f"u:{context.principal.user_id}"
    named = ["you" if key == mine else _KEY_WORDS.get(key[:1], "{}").format(key[2:])
             for key in sorted(acl, key=lambda k: (k != mine, "utop".find(k[:1]), k))
             if key != mine or context.principal.may_read(sensitivity)]
    return f"{', '.join(named)} (cleared for {sensitivity})"


def acl_fields(keys: Iterable[str]) -> dict[str, bool]:
    """The access keys as index metadata fields."""
    return {f"{ACL_PREFIX}{key}": True for key in keys}


def keys_of(fields: Mapping[str, Any]) -> set[str]:
    """The access keys of an item from its index metadata or hit fields (``acl`` list or ``acl:`` flags)."""
    listed = fields.get("acl")
    found = set(listed) if isinstance(listed, (list, tuple)) else set()
    return found | {name[len(ACL_PREFIX):] for name, value in fields.items() if name.startswith(ACL_PREFIX) and value}


def visible(fields: Mapping[str, Any], context: RequestContext, now: float) -> bool:
    """Whether the caller may see an item with these access fields (acl keys, sensitivity, expires_epoch)."""
    principal = context.principal
    if not keys_of(fields) & set(principal.audience):
        return False
    if not principal.may_read(str(fields.get("sensitivity") or "normal")):
        return False
    expires = fields.get("expires_epoch")
    return expires is None or float(expires) > now


def access_filter(context: RequestContext, now: float) -> dict[str, Any]:
    """The index filter clauses of the rule for this caller (merged into a search's own filter)."""
    principal = context.principal
    return {"$or": [{f"{ACL_PREFIX}{key}": True} for key in principal.audience],
            "sensitivity": {"$in": list(principal.sensitivities())},
            "expires_epoch": {"$gt": now}}


def restrict(where: Mapping[str, Any] | None, context: RequestContext, now: float) -> dict[str, Any] | None:
    """A search's own filter with the access rule added; None when nothing can match (a filter of its
    own on a sensitivity above the caller's clearance)."""
    merged = dict(where or {})
    rule = access_filter(context, now)
    allowed = rule.pop("sensitivity")["$in"]
    asked = merged.pop("sensitivity", None)
    if asked is None:
        merged["sensitivity"] = {"$in": allowed}
    else:
        wanted = asked["$in"] if isinstance(asked, dict) else [asked]
        merged["sensitivity"] = {"$in": [s for s in wanted if s in allowed]}
        if not merged["sensitivity"]["$in"]:
            return None
    bound = merged.get("expires_epoch")
    merged["expires_epoch"] = {**(bound if isinstance(bound, dict) else {}), **rule.pop("expires_epoch")}
    merged["$or"] = rule["$or"]
    return merged


YEAR = 365.25 * 86_400.0
MAX_RETENTION_DAYS = 36_500


def expiry(retention: str, ts_epoch: float, retention_days: object = None) -> float:
    """When an item expires: ``1y`` a year after its timestamp, ``custom`` ``retention_days`` after it
    (without them: never), ``forever`` and ``until_resolved`` (until resolved) never."""
    if retention == "1y":
        return ts_epoch + YEAR
    if retention == "custom" and retention_days is None:
        return NEVER  # spec 000's custom rule, deferred: kept until a duration is given
    if retention == "custom":
        return ts_epoch + days(retention_days) * 86_400.0
    return NEVER


def days(retention_days: object) -> int:
    """``retention_days``: a whole number of days from 1 to MAX_RETENTION_DAYS (a string of digits is not)."""
    if isinstance(retention_days, bool) or not isinstance(retention_days, int) or not (
            1 <= retention_days <= MAX_RETENTION_DAYS):
        raise ValidationError("retention_days", f"retention_days must be a whole number of days from 1 to "
                                                f"{MAX_RETENTION_DAYS} (got {retention_days!r})")
    return retention_days


def owned(context: RequestContext, visibility: str, visible_to: object = None) -> dict[str, Any]:
    """The owner and access keys of an item the caller writes with this visibility."""
    principal = context.principal
    custom = custom_keys(visible_to) if visibility == "custom" else ()
    return {"owner": principal.user_id, "acl": audience_keys(principal, visibility, custom)}


def may_change(item: Any, context: RequestContext) -> bool:
    """Whether a caller that sees an item may delete, resolve or overwrite it: its owner may; an item
    of a project (the server's, shared with the project) any member of the project may."""
    principal = context.principal
    if item.owner == principal.user_id:
        return True
    projects = {key for key in item.acl if key.startswith("p:")}
    return item.owner == LOCAL_USER and bool(projects & set(principal.audience))


def refusal(item: Any, context: RequestContext, now: float) -> str | None:
    """Why the caller may not change an item (None: it may): it cannot see it, or it is another's."""
    if not visible(access_fields(item), context, now):
        return NOT_VISIBLE
    return None if may_change(item, context) else "another owner's"


def access_metadata(item: Any) -> dict[str, Any]:
    """What an item's (memory, turn, artifact) vectors carry for the rule inside the index."""
    return {**acl_fields(item.acl), "sensitivity": item.sensitivity, "expires_epoch": item.expires_epoch}


def access_fields(item: Any) -> dict[str, Any]:
    """An item's access fields as ``visible`` reads them."""
    return {"acl": item.acl, "sensitivity": item.sensitivity, "expires_epoch": item.expires_epoch}
