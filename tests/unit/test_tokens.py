"""The token use cases (domain/access/tokens.py) on the in-memory store: issued once, kept as a hash,
listed without secrets, revoked at once, authenticated only while active."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

import pytest

from adapters.memory.tokens import InMemoryTokens
from domain.access.principal import Principal
from domain.access.tokens import (
    Authenticate, CreateToken, GrantProjects, IssuedToken, ListTokens, RevokeToken, narrowed, project_names, token_hash,
)
from domain.errors import NotFoundError, ValidationError
from domain.ports.identity import TokenInfo

ALICE = Principal("alice", teams=("eng",), org="acme", clearance="sensitive", projects=("web",))
BOB = Principal("bob")


def clock() -> Callable[[], str]:
    """A clock giving 2026-01-01, then 2026-01-02, ... one day per reading."""
    days: Iterator[int] = iter(range(1, 29))
    return lambda: f"2026-01-{next(days):02d}T00:00:00Z"


@pytest.fixture
def store() -> InMemoryTokens:
    return InMemoryTokens()


def test_a_new_token_has_a_fresh_secret_an_id_and_its_time(store: InMemoryTokens) -> None:
    issued = CreateToken(store, clock())(ALICE, "laptop")
    assert re.fullmatch(r"mt_[A-Za-z0-9_-]{43}", issued.secret)
    assert re.fullmatch(r"tok_[0-9a-f]{12}", issued.token_id)
    assert (issued.principal, issued.label, issued.created_at) == (ALICE, "laptop", "2026-01-01T00:00:00Z")
    other = CreateToken(store, clock())(ALICE)
    assert other.secret != issued.secret and other.token_id != issued.token_id and other.label is None


def test_only_the_hash_of_the_secret_is_kept(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(ALICE)
    assert token_hash(issued.secret) == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert store.tokens[issued.token_id][1] == token_hash(issued.secret)
    assert issued.secret not in repr(store.tokens) and issued.secret not in repr(issued)


def test_token_hash_is_sha256_hex() -> None:
    assert token_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_the_listing_names_each_token_without_its_secret(store: InMemoryTokens) -> None:
    create = CreateToken(store, clock())
    first, second = create(ALICE, "ci"), create(BOB)
    assert ListTokens(store)() == [TokenInfo(first.token_id, ALICE, "ci", "2026-01-01T00:00:00Z"),
                                   TokenInfo(second.token_id, BOB, None, "2026-01-02T00:00:00Z")]
    assert first.secret not in repr(ListTokens(store)()) and second.secret not in repr(ListTokens(store)())


def test_a_secret_names_its_principal_until_revoked(store: InMemoryTokens) -> None:
    issued, other = CreateToken(store)(ALICE), CreateToken(store)(ALICE)
    authenticate = Authenticate(store)
    assert authenticate(issued.secret) == ALICE and authenticate(other.secret) == ALICE
    RevokeToken(store, clock())(issued.token_id)
    assert authenticate(issued.secret) is None  # the very next lookup
    assert authenticate(other.secret) == ALICE  # the user's other token is untouched
    assert [i.revoked_at for i in ListTokens(store)() if i.token_id == issued.token_id] == ["2026-01-01T00:00:00Z"]


@pytest.mark.parametrize("given", ["", "mt_", "mt_wrong", "Bearer mt_x", "x" * 46, "mt_" + "a" * 300, "mt_é"])
def test_anything_else_names_nobody(store: InMemoryTokens, given: str) -> None:
    CreateToken(store)(ALICE)
    assert Authenticate(store)(given) is None


def test_the_stored_hash_is_no_secret(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(ALICE)
    assert Authenticate(store)(token_hash(issued.secret)) is None
    assert Authenticate(store)("mt_" + token_hash(issued.secret)) is None


def test_revoking_an_unknown_or_revoked_token_is_not_found(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(BOB)
    with pytest.raises(NotFoundError, match="tok_000000000000"):
        RevokeToken(store)("tok_000000000000")
    RevokeToken(store)(issued.token_id)
    with pytest.raises(NotFoundError, match="already revoked"):
        RevokeToken(store)(issued.token_id)


@pytest.mark.parametrize("token_id", ["", "tok_", "tok_XYZ", "abc_000000000000", "tok_0000000000001", None, 7])
def test_a_malformed_token_id_is_a_validation_error(store: InMemoryTokens, token_id: object) -> None:
    with pytest.raises(ValidationError) as caught:
        RevokeToken(store)(token_id)
    assert caught.value.field == "token_id"


@pytest.mark.parametrize(("label", "projects", "field"), [
    ("x" * 201, None, "label"), (7, None, "label"), ("  ", None, "label"),
    (None, ("",), "project"), (None, ("p" * 101,), "project"),
])
def test_bad_input_names_its_field_and_keeps_nothing(store: InMemoryTokens, label: object,
                                                     projects: tuple[str, ...] | None, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CreateToken(store)(Principal("alice", projects=projects), label)
    assert caught.value.field == field and ListTokens(store)() == []


def test_an_issued_token_is_a_plain_value() -> None:
    issued = IssuedToken("tok_000000000001", "mt_secret", BOB, None, "2026-01-01T00:00:00Z")
    assert "mt_secret" not in repr(issued) and issued.secret == "mt_secret"


def test_a_token_stored_for_a_reserved_principal_never_authenticates() -> None:
    """One made before such tokens were refused (straight into the store here): never the local owner,
    never every project."""
    store = InMemoryTokens()
    for n, principal in enumerate([Principal("local"), Principal("bob", projects=("*",))]):
        store.add_token(f"tok_{n}", token_hash(f"mt_secret{n}"), principal, None, "2025-01-01T00:00:00Z")
        assert Authenticate(store)(f"mt_secret{n}") is None
    store.add_token("tok_9", token_hash("mt_secret9"), Principal("carol"), None, "2025-01-01T00:00:00Z")
    assert Authenticate(store)("mt_secret9") == Principal("carol")  # the same way in, for anyone else


@pytest.mark.parametrize(("given", "projects"), [
    ([], ()), (["web"], ("web",)), (["web", "api", "web"], ("web", "api")), (["*"], None)])
def test_projects_are_none_unless_named_and_star_alone_is_every_project(given: list[str],
                                                                        projects: tuple[str, ...] | None) -> None:
    assert project_names(given) == projects


@pytest.mark.parametrize("given", [["*", "web"], ["not a project"], [""], "web", [7]])
def test_bad_projects_name_the_field(given: object) -> None:
    with pytest.raises(ValidationError) as caught:
        project_names(given)
    assert caught.value.field == "project"


def test_projects_granted_to_a_live_token_count_from_its_next_lookup(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(Principal("bob", projects=()))
    assert Authenticate(store)(issued.secret).projects == ()
    assert GrantProjects(store)(issued.token_id, ["web"]).principal.projects == ("web",)
    assert GrantProjects(store)(issued.token_id, ["api", "web"]).principal.projects == ("web", "api")
    assert Authenticate(store)(issued.secret).projects == ("web", "api")  # added to, never replaced
    assert GrantProjects(store)(issued.token_id, ["*"]).principal.projects is None
    assert Authenticate(store)(issued.secret).projects is None
    assert GrantProjects(store)(issued.token_id, ["web"]).principal.projects is None  # every project includes it
    with pytest.raises(ValidationError) as caught:
        GrantProjects(store)(issued.token_id, [])
    assert caught.value.field == "project"
    RevokeToken(store)(issued.token_id)
    for token_id in (issued.token_id, "tok_000000000000"):
        with pytest.raises(NotFoundError, match="unknown or already revoked"):
            GrantProjects(store)(token_id, ["web"])


def test_a_narrowed_token_is_named_until_projects_are_granted_back(store: InMemoryTokens) -> None:
    kept = TokenInfo("tok_000000000001", Principal("bob", projects=()), None, "2026-01-01T00:00:00Z",
                     narrowed_at="2026-02-01T00:00:00Z")
    store.tokens[kept.token_id] = (kept, token_hash("mt_bob"))
    other = CreateToken(store)(Principal("carol", projects=()))
    assert [i.token_id for i in narrowed(ListTokens(store)())] == [kept.token_id]  # carol's never reached any
    GrantProjects(store)(kept.token_id, ["web"])
    assert narrowed(ListTokens(store)()) == [] and other.token_id in {i.token_id for i in ListTokens(store)()}
