"""Bearer tokens mapped to principals: issued once (only a hash is kept), listed, revoked at once."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from domain.access.principal import Principal
from domain.common import Clock, utc_now
from domain.errors import NotFoundError
from domain.ports.identity import TokenInfo, TokenStore
from domain.validation import optional_text

PREFIX = "mt_"


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token_id: str
    secret: str  # shown once, never stored
    info: TokenInfo


@dataclass(frozen=True, slots=True)
class CreateToken:
    store: TokenStore
    clock: Clock = utc_now

    def __call__(self, principal: Principal, label: object = None) -> IssuedToken:
        secret = PREFIX + secrets.token_urlsafe(32)
        info = TokenInfo(f"tok_{secrets.token_hex(6)}", principal, optional_text("label", label, 200), self.clock())
        self.store.add_token(info, token_hash(secret))
        return IssuedToken(info.token_id, secret, info)


@dataclass(frozen=True, slots=True)
class RevokeToken:
    store: TokenStore
    clock: Clock = utc_now

    def __call__(self, token_id: str) -> None:
        if not self.store.revoke_token(token_id, self.clock()):
            raise NotFoundError(f"No active token {token_id!r}")


@dataclass(frozen=True, slots=True)
class Authenticate:
    """The principal a bearer secret maps to; None for an unknown or revoked one (looked up by its hash,
    so no secret is ever compared or kept)."""

    store: TokenStore

    def __call__(self, secret: str) -> Principal | None:
        if not secret.startswith(PREFIX) or len(secret) > 200:
            return None
        return self.store.principal_for(token_hash(secret))
