"""Bearer tokens in the in-memory fake (the same contract as adapters/sqlalchemy_tokens.py)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from domain.access.principal import Principal
from domain.ports.identity import TokenInfo, TokenStore


class InMemoryTokens(TokenStore):
    """A mixin: compose it before the other fake stores."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(TokenStore, self).__init__(*args, **kwargs)  # past the Protocol's placeholder __init__
        self._tokens_lock = threading.Lock()
        self.tokens: dict[str, tuple[TokenInfo, str]] = {}

    def add_token(self, info: TokenInfo, token_hash: str) -> None:
        with self._tokens_lock:
            if info.token_id in self.tokens or any(h == token_hash for _, h in self.tokens.values()):
                raise ValueError("duplicate token")
            self.tokens[info.token_id] = (info, token_hash)

    def principal_for(self, token_hash: str) -> Principal | None:
        with self._tokens_lock:
            return next((i.principal for i, h in self.tokens.values() if h == token_hash and i.revoked_at is None),
                        None)

    def list_tokens(self) -> list[TokenInfo]:
        with self._tokens_lock:
            return sorted((i for i, _ in self.tokens.values()), key=lambda i: (i.created_at, i.token_id))

    def revoke_token(self, token_id: str, revoked_at: str) -> bool:
        with self._tokens_lock:
            found = self.tokens.get(token_id)
            if found is None or found[0].revoked_at is not None:
                return False
            self.tokens[token_id] = (replace(found[0], revoked_at=revoked_at), found[1])
            return True
