"""In-memory fake of the TokenStore port (the same contract as adapters/sql/tokens.py): tokens in
a dict behind one lock. A mixin: compose it first, e.g. ``class Store(InMemoryTokens, InMemoryStore)``."""

from __future__ import annotations

import hmac
import threading
from dataclasses import replace
from typing import Any

from domain.access.principal import Principal
from domain.errors import StorageError
from domain.ports.identity import TokenInfo, TokenStore


class InMemoryTokens(TokenStore):
    """Each token's listing and the hash of its secret, by token id."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # super(TokenStore, ...) on purpose: TokenStore is a typing.Protocol whose placeholder
        # __init__ would end the chain here, leaving the other bases (InMemoryStore...) uninitialised.
        super(TokenStore, self).__init__(*args, **kwargs)
        self._tokens_lock = threading.Lock()
        self.tokens: dict[str, tuple[TokenInfo, str]] = {}

    def add_token(self, token_id: str, token_hash: str, principal: Principal, label: str | None,
                  created_at: str) -> None:
        with self._tokens_lock:
            if token_id in self.tokens or any(kept == token_hash for _, kept in self.tokens.values()):
                raise StorageError("Failed to write to the metadata store: a token of that id or hash exists")
            self.tokens[token_id] = (TokenInfo(token_id, principal, label, created_at), token_hash)

    def principal_for_hash(self, token_hash: str) -> Principal | None:
        found = self.token_for_hash(token_hash)
        return None if found is None else found.principal

    def token_for_hash(self, token_hash: str) -> TokenInfo | None:
        given = token_hash.encode()
        with self._tokens_lock:
            # Every hash is compared, each in constant time: as slow for a miss as for a hit.
            found = [info for info, kept in self.tokens.values() if hmac.compare_digest(kept.encode(), given)]
        return found[0] if found and found[0].revoked_at is None else None

    def list_tokens(self) -> list[TokenInfo]:
        with self._tokens_lock:
            return sorted((info for info, _ in self.tokens.values()), key=lambda i: (i.created_at, i.token_id))

    def revoke_token(self, token_id: str, revoked_at: str) -> bool:
        with self._tokens_lock:
            kept = self.tokens.get(token_id)
            if kept is None or kept[0].revoked_at is not None:
                return False
            self.tokens[token_id] = (replace(kept[0], revoked_at=revoked_at), kept[1])
            return True

    def set_token_projects(self, token_id: str, projects: tuple[str, ...] | None) -> bool:
        with self._tokens_lock:
            kept = self.tokens.get(token_id)
            if kept is None or kept[0].revoked_at is not None:
                return False
            info = kept[0]
            self.tokens[token_id] = (replace(info, principal=replace(info.principal, projects=projects),
                                             narrowed_at=None), kept[1])
            return True
