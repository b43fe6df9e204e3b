"""The port of bearer tokens: each maps to a principal; only a hash of its secret is stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from domain.access.principal import Principal


@dataclass(frozen=True, slots=True)
class TokenInfo:
    token_id: str
    principal: Principal
    label: str | None
    created_at: str
    revoked_at: str | None = None


@runtime_checkable
class TokenStore(Protocol):
    def add_token(self, info: TokenInfo, token_hash: str) -> None:
        """Keep a new token (its hash and whom it names)."""
        ...

    def principal_for(self, token_hash: str) -> Principal | None:
        """Whom an active (not revoked) token names; None otherwise."""
        ...

    def list_tokens(self) -> list[TokenInfo]:
        """Every token, oldest first, revoked ones too (never a secret or a hash)."""
        ...

    def revoke_token(self, token_id: str, revoked_at: str) -> bool:
        """Revoke an active token at once; False when there is no such active token."""
        ...
