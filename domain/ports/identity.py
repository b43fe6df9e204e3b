"""The port of bearer tokens: each names a principal; only a hash of its secret is ever stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from domain.access.principal import Principal


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as it is listed: whom it names and when, never its secret or the secret's hash."""

    token_id: str
    principal: Principal
    label: str | None
    created_at: str
    revoked_at: str | None = None
    # When an upgrade took away the every-project access it had only for being made without --project
    # (least privilege); None once projects are granted to it again, or for a token never narrowed.
    narrowed_at: str | None = None


@runtime_checkable
class TokenStore(Protocol):
    """Tokens in the store (durable, shared by every replica), looked up by the hash of their secret."""

    def add_token(self, token_id: str, token_hash: str, principal: Principal, label: str | None,
                  created_at: str) -> None:
        """Keep a new token; a token id or hash already kept raises StorageError and changes nothing."""
        ...

    def principal_for_hash(self, token_hash: str) -> Principal | None:
        """Whom the token of that hash names; None when there is none or it is revoked."""
        ...

    def token_for_hash(self, token_hash: str) -> TokenInfo | None:
        """The live token of that hash (its id and principal); None when there is none or it is revoked."""
        ...

    def list_tokens(self) -> list[TokenInfo]:
        """Every token, revoked ones too, oldest first (then by id)."""
        ...

    def revoke_token(self, token_id: str, revoked_at: str) -> bool:
        """Revoke a token for every lookup from now on; False when it is unknown or already revoked."""
        ...

    def set_token_projects(self, token_id: str, projects: tuple[str, ...] | None) -> bool:
        """The projects a live token reaches from its next lookup on (None: every project); its
        ``narrowed_at`` is cleared. False when it is unknown or revoked (nothing changes)."""
        ...
