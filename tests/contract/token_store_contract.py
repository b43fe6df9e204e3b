"""The behaviour every TokenStore shares: a token names its principal exactly as it was given, by the hash
of its secret, until it is revoked (at once); listings name no secret; tokens are durable.

Subclass TokenStoreContract as ``Test...`` and override the ``store`` fixture with a fresh, empty store;
override ``reopen`` with a callable giving another store object on the same database (the durability
test skips without one).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from domain.access.principal import Principal
from domain.access.tokens import Authenticate, CreateToken, RevokeToken, token_hash
from domain.errors import StorageError
from domain.ports.identity import TokenInfo, TokenStore

ALICE = Principal("alice", teams=("ops", "eng"), org="acme", clearance="sensitive", projects=("web", "api"))
BOB = Principal("bob")  # no team, no org, normal, every project
CAROL = Principal("carol@example.org", teams=("eng",), clearance="highly_sensitive", projects=())  # no project
PRINCIPALS = (ALICE, BOB, CAROL, Principal("dave", org="acme", projects=None))


def at(day: int) -> str:
    return f"2026-01-{day:02d}T00:00:00Z"


def digest(n: int) -> str:
    return f"{n:064x}"


class TokenStoreContract:
    @pytest.fixture
    def reopen(self) -> Callable[[], TokenStore] | None:
        return None

    def test_it_is_a_token_store(self, store: TokenStore) -> None:
        assert isinstance(store, TokenStore)
        assert store.list_tokens() == [] and store.principal_for_hash(digest(1)) is None

    def test_a_token_names_its_principal_by_hash(self, store: TokenStore) -> None:
        store.add_token("tok_000000000001", digest(1), ALICE, "laptop", at(1))
        store.add_token("tok_000000000002", digest(2), BOB, None, at(2))
        assert store.principal_for_hash(digest(1)) == ALICE and store.principal_for_hash(digest(2)) == BOB
        assert store.principal_for_hash(digest(3)) is None
        assert store.principal_for_hash("tok_000000000001") is None  # an id is no hash
        assert store.token_for_hash(digest(1)) == TokenInfo("tok_000000000001", ALICE, "laptop", at(1))
        assert store.token_for_hash(digest(3)) is None
        store.revoke_token("tok_000000000002", at(3))
        assert store.token_for_hash(digest(2)) is None

    def test_principals_come_back_exactly(self, store: TokenStore) -> None:
        """Teams in their order, org or None, every clearance, projects None (all) apart from () (none)."""
        for n, principal in enumerate(PRINCIPALS, start=1):
            store.add_token(f"tok_{n:012x}", digest(n), principal, None, at(n))
        for n, principal in enumerate(PRINCIPALS, start=1):
            found = store.principal_for_hash(digest(n))
            assert found == principal and found.teams == principal.teams and found.projects == principal.projects
        assert store.principal_for_hash(digest(3)).projects == () and store.principal_for_hash(digest(2)).projects is None
        assert [i.principal for i in store.list_tokens()] == list(PRINCIPALS)

    def test_the_listing_names_every_token_and_no_secret(self, store: TokenStore) -> None:
        store.add_token("tok_00000000000b", digest(2), BOB, None, at(2))
        store.add_token("tok_00000000000a", digest(1), ALICE, "ci: ünïcode label", at(1))
        store.add_token("tok_00000000000c", digest(3), CAROL, None, at(2))
        assert store.list_tokens() == [  # oldest first, then by id
            TokenInfo("tok_00000000000a", ALICE, "ci: ünïcode label", at(1)),
            TokenInfo("tok_00000000000b", BOB, None, at(2)),
            TokenInfo("tok_00000000000c", CAROL, None, at(2))]
        assert all(digest(n) not in repr(store.list_tokens()) for n in (1, 2, 3))

    def test_a_revoked_token_fails_the_very_next_lookup(self, store: TokenStore) -> None:
        store.add_token("tok_000000000001", digest(1), ALICE, None, at(1))
        assert store.principal_for_hash(digest(1)) == ALICE
        assert store.revoke_token("tok_000000000001", at(3)) is True
        assert store.principal_for_hash(digest(1)) is None
        assert store.list_tokens() == [TokenInfo("tok_000000000001", ALICE, None, at(1), revoked_at=at(3))]

    def test_revoking_twice_or_an_unknown_token_is_false(self, store: TokenStore) -> None:
        store.add_token("tok_000000000001", digest(1), ALICE, None, at(1))
        assert store.revoke_token("tok_0000000000ff", at(2)) is False
        assert store.revoke_token("tok_000000000001", at(2)) is True
        assert store.revoke_token("tok_000000000001", at(3)) is False
        assert store.list_tokens()[0].revoked_at == at(2)  # the first revocation stands

    def test_two_tokens_of_one_user_are_revoked_apart(self, store: TokenStore) -> None:
        store.add_token("tok_000000000001", digest(1), ALICE, "laptop", at(1))
        store.add_token("tok_000000000002", digest(2), ALICE, "ci", at(1))
        assert store.principal_for_hash(digest(1)) == store.principal_for_hash(digest(2)) == ALICE
        store.revoke_token("tok_000000000001", at(2))
        assert store.principal_for_hash(digest(1)) is None and store.principal_for_hash(digest(2)) == ALICE
        assert [(i.token_id, i.revoked_at) for i in store.list_tokens()] == [
            ("tok_000000000001", at(2)), ("tok_000000000002", None)]

    def test_a_taken_id_or_hash_is_refused(self, store: TokenStore) -> None:
        store.add_token("tok_000000000001", digest(1), ALICE, None, at(1))
        with pytest.raises(StorageError):
            store.add_token("tok_000000000001", digest(2), BOB, None, at(2))
        with pytest.raises(StorageError):
            store.add_token("tok_000000000002", digest(1), BOB, None, at(2))
        assert store.list_tokens() == [TokenInfo("tok_000000000001", ALICE, None, at(1))]
        assert store.principal_for_hash(digest(1)) == ALICE and store.principal_for_hash(digest(2)) is None

    def test_a_live_tokens_projects_are_set_from_its_next_lookup(self, store: TokenStore) -> None:
        store.add_token("tok_000000000001", digest(1), CAROL, None, at(1))
        store.add_token("tok_000000000002", digest(2), ALICE, None, at(1))
        assert store.set_token_projects("tok_000000000001", ("web", "api")) is True
        assert store.principal_for_hash(digest(1)) == Principal(
            "carol@example.org", teams=("eng",), clearance="highly_sensitive", projects=("web", "api"))
        assert store.set_token_projects("tok_000000000001", None) is True
        assert store.principal_for_hash(digest(1)).projects is None
        assert store.set_token_projects("tok_000000000001", ()) is True
        assert store.principal_for_hash(digest(1)).projects == ()
        assert store.principal_for_hash(digest(2)) == ALICE  # the other token is untouched
        store.revoke_token("tok_000000000002", at(2))
        assert store.set_token_projects("tok_000000000002", None) is False
        assert store.set_token_projects("tok_0000000000ff", None) is False
        assert [i.principal.projects for i in store.list_tokens()] == [(), ("web", "api")]
        assert all(i.narrowed_at is None for i in store.list_tokens())

    def test_the_use_cases_over_this_store(self, store: TokenStore) -> None:
        issued = CreateToken(store)(ALICE, "ci")
        other = CreateToken(store)(ALICE)
        assert Authenticate(store)(issued.secret) == ALICE == Authenticate(store)(other.secret)
        assert Authenticate(store)(token_hash(issued.secret)) is None  # the stored hash is no secret
        assert all(issued.secret not in repr(info) for info in store.list_tokens())
        RevokeToken(store)(issued.token_id)
        assert Authenticate(store)(issued.secret) is None and Authenticate(store)(other.secret) == ALICE

    def test_tokens_and_revocations_are_durable(self, store: TokenStore,
                                                reopen: Callable[[], TokenStore] | None) -> None:
        if reopen is None:
            pytest.skip("this store keeps nothing past its object")
        store.add_token("tok_000000000001", digest(1), ALICE, "laptop", at(1))
        store.add_token("tok_000000000002", digest(2), CAROL, None, at(2))
        store.revoke_token("tok_000000000002", at(3))
        again = reopen()
        try:
            assert again.principal_for_hash(digest(1)) == ALICE and again.principal_for_hash(digest(2)) is None
            assert again.list_tokens() == store.list_tokens()
            assert again.revoke_token("tok_000000000001", at(4))
            assert store.principal_for_hash(digest(1)) is None  # revoked through another store object: at once
        finally:
            close = getattr(again, "close", None)
            if close is not None:
                close()
