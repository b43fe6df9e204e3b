"""The access rule on single items and as an index filter: owner, team, org, custom; clearance; expiry."""

from __future__ import annotations

import pytest

from adapters.vectors.similarity import matches
from domain.access.principal import Principal, RequestContext
from domain.access.rules import NEVER, acl_fields, audience_keys, custom_keys, restrict, visible
from domain.errors import ValidationError

ALICE = Principal("alice", teams=("eng",), org="acme", clearance="sensitive")
BOB = Principal("bob", teams=("eng",), org="acme")
CAROL = Principal("carol", teams=("ops",), org="acme", clearance="highly_sensitive")
DAVE = Principal("dave", org="other", clearance="highly_sensitive")


def item(owner: Principal, visibility: str, sensitivity: str = "normal", visible_to=(), expires: float = NEVER):
    return {**acl_fields(audience_keys(owner, visibility, custom_keys(list(visible_to)))),
            "sensitivity": sensitivity, "expires_epoch": expires}


@pytest.mark.parametrize(("visibility", "who"), [
    ("me", {"alice"}), ("team", {"alice", "bob"}), ("org", {"alice", "bob", "carol"}),
])
def test_visibility_decides_who_sees_an_item(visibility: str, who: set[str]) -> None:
    fields = item(ALICE, visibility)
    for caller in (ALICE, BOB, CAROL, DAVE):
        assert visible(fields, RequestContext(caller), 0.0) == (caller.user_id in who), caller.user_id


def test_custom_names_principals_and_teams() -> None:
    fields = item(ALICE, "custom", visible_to=["dave", "team:ops"])
    assert [c.user_id for c in (ALICE, BOB, CAROL, DAVE) if visible(fields, RequestContext(c), 0.0)] == [
        "alice", "carol", "dave"]
    with pytest.raises(ValidationError) as bad:
        custom_keys(["team:"])
    assert bad.value.field == "visible_to"


def test_clearance_caps_sensitivity_and_expired_items_are_gone() -> None:
    assert not visible(item(ALICE, "me", "highly_sensitive"), RequestContext(ALICE), 0.0)
    assert visible(item(ALICE, "me", "sensitive"), RequestContext(ALICE), 0.0)
    assert not visible(item(ALICE, "org", "sensitive"), RequestContext(BOB), 0.0)  # bob: normal only
    assert visible(item(CAROL, "org", "highly_sensitive"), RequestContext(CAROL), 0.0)
    assert not visible(item(ALICE, "me", expires=10.0), RequestContext(ALICE), 10.0)


def test_the_index_filter_says_what_the_single_item_rule_says() -> None:
    """Every item of every owner, visibility and sensitivity: the filter and ``visible`` agree."""
    items = [item(owner, vis, sens, ["bob"] if vis == "custom" else (), exp)
             for owner in (ALICE, BOB, CAROL, DAVE) for vis in ("me", "team", "org", "custom")
             for sens in ("normal", "sensitive", "highly_sensitive") for exp in (5.0, NEVER)]
    for caller in (ALICE, BOB, CAROL, DAVE):
        context = RequestContext(caller)
        where = restrict({}, context, 5.0)
        assert [matches(f, where) for f in items] == [visible(f, context, 5.0) for f in items]


def test_a_filter_on_a_sensitivity_above_the_clearance_matches_nothing() -> None:
    assert restrict({"sensitivity": "highly_sensitive"}, RequestContext(ALICE), 0.0) is None
    assert restrict({"sensitivity": "sensitive"}, RequestContext(ALICE), 0.0)["sensitivity"] == {"$in": ["sensitive"]}


def test_who_may_change_an_item_it_sees() -> None:
    from types import SimpleNamespace

    from domain.access.rules import may_change, refusal

    def ctx(user: str, projects: tuple[str, ...] | None = None, teams: tuple[str, ...] = ("eng",)) -> RequestContext:
        return RequestContext(Principal(user, teams=teams, projects=projects))

    team_item = SimpleNamespace(owner="alice", acl=("t:eng", "u:alice"), sensitivity="normal", expires_epoch=NEVER)
    assert may_change(team_item, ctx("alice")) and not may_change(team_item, ctx("bob"))
    assert refusal(team_item, ctx("bob"), 0.0) == "another owner's"
    assert refusal(team_item, ctx("carol", teams=("ops",)), 0.0) == "not visible to the caller"
    assert refusal(team_item, ctx("alice"), NEVER + 1) == "not visible to the caller"  # expired
    project_item = SimpleNamespace(owner="local", acl=("p:*", "p:atlas", "u:local"), sensitivity="normal",
                                   expires_epoch=NEVER)
    assert may_change(project_item, ctx("bob", projects=("atlas",)))
    assert not may_change(project_item, ctx("bob", projects=("zeus",)))
    private = SimpleNamespace(owner="local", acl=("u:local",), sensitivity="normal", expires_epoch=NEVER)
    assert not may_change(private, ctx("bob"))
