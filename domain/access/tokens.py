"""Bearer tokens mapped to principals: issued once (only a hash of the secret is kept), listed, revoked
at once, and turned back into their principal when a request presents one."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field, replace

from domain.access.principal import LOCAL_USER, Principal, check_name
from domain.common import Clock, utc_now
from domain.errors import NotFoundError, ValidationError
from domain.ports.identity import TokenInfo, TokenStore
from domain.validation import optional_text, require_id

__all__ = ["Authenticate", "CreateToken", "GrantProjects", "IssuedToken", "ListTokens", "RevokeToken", "TokenInfo",
           "narrowed", "new_secret", "new_token_id", "project_names", "token_hash"]

EVERY_PROJECT = "*"  # the spelling of "every project" where projects are named (--project '*')
SECRET_PREFIX = "mt_"
TOKEN_ID_PREFIX = "tok_"
TOKEN_ID = re.compile(r"tok_[0-9a-f]{12}")
MAX_SECRET = 200  # far above a real secret (46 characters): anything longer is not ours, nor hashed


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def new_token_id() -> str:
    return TOKEN_ID_PREFIX + secrets.token_hex(6)


def token_hash(secret: str) -> str:
    """What the store keeps of a secret: its SHA-256, in hex (a 256-bit random secret needs no salt)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A new token: ``secret`` is shown to whoever asked for it once, and never again."""

    token_id: str
    secret: str = field(repr=False)  # kept out of reprs, so out of logs and tracebacks
    principal: Principal
    label: str | None
    created_at: str


def reserved(principal: Principal) -> bool:
    """A principal no token may name: the local owner, or "every project" as one project."""
    return principal.user_id == LOCAL_USER or "*" in (principal.projects or ())


def project_names(projects: object) -> tuple[str, ...] | None:
    """Projects as a token names them: each checked; ``*`` alone stands for every project (None). A token
    reaches no project unless given one: least privilege, as the owner opens projects to it."""
    if not isinstance(projects, (list, tuple)) or not all(isinstance(p, str) for p in projects):
        raise ValidationError("project", "project must be a list of project names")
    if EVERY_PROJECT in projects:
        if len(projects) > 1:
            raise ValidationError("project", f"project {EVERY_PROJECT!r} means every project: give it alone, not "
                                             "beside named projects")
        return None
    return tuple(dict.fromkeys(check_name("project", p) for p in projects))


@dataclass(frozen=True, slots=True)
class CreateToken:
    store: TokenStore
    clock: Clock = utc_now

    def __call__(self, principal: Principal, label: object = None) -> IssuedToken:
        if principal.user_id == LOCAL_USER:
            raise ValidationError("user_id", f"user_id {LOCAL_USER!r} is the server's own owner (stdio, the local "
                                             "socket, the shared HTTP token): a token names another user")
        for project in principal.projects or ():
            check_name("project", project)  # never "*": that key stands for every project
        issued = IssuedToken(new_token_id(), new_secret(), principal, optional_text("label", label, 200),
                             self.clock())
        self.store.add_token(issued.token_id, token_hash(issued.secret), principal, issued.label, issued.created_at)
        return issued


@dataclass(frozen=True, slots=True)
class ListTokens:
    store: TokenStore

    def __call__(self) -> list[TokenInfo]:
        return self.store.list_tokens()


def narrowed(infos: list[TokenInfo]) -> list[TokenInfo]:
    """The live tokens an upgrade narrowed to no project that were granted none since."""
    return [i for i in infos if i.narrowed_at is not None and i.revoked_at is None and i.principal.projects == ()]


@dataclass(frozen=True, slots=True)
class GrantProjects:
    """A live token reaches these projects too, from its next request on (``*``: every project)."""

    store: TokenStore

    def __call__(self, token_id: object, projects: object) -> TokenInfo:
        checked = require_id("token_id", token_id, TOKEN_ID_PREFIX, TOKEN_ID, "12 hexadecimal characters")
        granted = project_names(projects)
        if granted == ():
            raise ValidationError("project", "project: name at least one project to grant (or '*' for every one)")
        found = next((i for i in self.store.list_tokens() if i.token_id == checked and i.revoked_at is None), None)
        held = None if found is None else found.principal.projects
        merged = None if granted is None or held is None else tuple(dict.fromkeys((*held, *granted)))
        if found is None or not self.store.set_token_projects(checked, merged):
            raise NotFoundError(f"No active token {checked!r}: it is unknown or already revoked")
        return TokenInfo(found.token_id, replace(found.principal, projects=merged), found.label, found.created_at)


@dataclass(frozen=True, slots=True)
class RevokeToken:
    """Revoked at once: the very next lookup of its secret finds nothing."""

    store: TokenStore
    clock: Clock = utc_now

    def __call__(self, token_id: object) -> None:
        checked = require_id("token_id", token_id, TOKEN_ID_PREFIX, TOKEN_ID, "12 hexadecimal characters")
        if not self.store.revoke_token(checked, self.clock()):
            raise NotFoundError(f"No active token {checked!r}: it is unknown or already revoked")


@dataclass(frozen=True, slots=True)
class Authenticate:
    """The principal a bearer secret names; None for an unknown or revoked one.

    The secret is looked up by its hash, so no secret is compared here; the store finds the hash by
    an index (SQL) or compares hashes in constant time (the fake).
    """

    store: TokenStore

    def __call__(self, secret: str) -> Principal | None:
        found = self.token(secret)
        return None if found is None else found.principal

    def token(self, secret: str) -> TokenInfo | None:
        """The live token the secret is of (its id names the client in the audit log)."""
        if not secret.startswith(SECRET_PREFIX) or len(secret) > MAX_SECRET or not secret.isascii():
            return None
        found = self.store.token_for_hash(token_hash(secret))
        if found is not None and reserved(found.principal):
            return None  # made before such tokens were refused: never the owner, never every project
        return found
