"""Who a page request is, under the same rules as /mcp (entrypoints/auth.py).

A request names its principal by ``Authorization: Bearer`` (scripts), or by a session cookie a browser
got from the login form (a token's secret, kept server-side and checked again on every request, so a
revoked token ends its sessions at once) or, on a loopback server with no token yet, at its first page
(the local owner, while ``anonymous`` still says so). A form that changes anything carries the session's
CSRF token; the cookie is HttpOnly and SameSite=Strict, so another site's page can neither read it nor
send it along.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from domain.access.principal import Principal
from entrypoints.auth import Anonymous, Authenticator, Who

COOKIE = "memtrove_session"
SESSION_FOR = 12 * 3600.0  # seconds a session lasts after its last use
MAX_SESSIONS = 10_000  # the oldest are dropped past this (a login flood cannot grow memory without end)


@dataclass(slots=True)
class Session:
    secret: str | None  # None: the local owner's (no token was given)
    csrf: str
    used: float


@dataclass(frozen=True, slots=True)
class Caller:
    principal: Principal
    session_id: str | None  # None: by bearer header (no cookie, no CSRF needed)
    csrf: str | None
    new: bool = False  # the session was made by this request: its cookie is to be set
    via: str | None = None  # the token it signed in with (its id), for the audit log


class Sessions:
    """The page's sessions, in this process's memory (a restart asks for the token again)."""

    def __init__(self, authenticate: Authenticator, anonymous: Anonymous | None) -> None:
        self.authenticate = authenticate
        self.anonymous = anonymous
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def resolve(self, bearer: str | None, cookie: str | None) -> Caller | None:
        """The caller of a request (a store read: called off the event loop); None: nobody we know."""
        if bearer:
            found = self.authenticate(bearer)
            return Caller(found.principal, None, None, via=found.via) if found is not None else None
        session = self._get(cookie) if cookie else None
        if session is not None:
            who = self._who(session)
            if who is not None:
                return Caller(who.principal, cookie, session.csrf, via=who.via)
            self.end(cookie)
        local = self.anonymous() if self.anonymous is not None else None
        if local is None:
            return None
        session_id = self._start(None)
        return Caller(local, session_id, self._sessions[session_id].csrf, new=True)

    def login(self, secret: str) -> tuple[str, Principal] | None:
        """A new session for the token ``secret``; None when it names nobody (missing, wrong or revoked)."""
        found = self.authenticate(secret) if secret else None
        if found is None:
            return None
        return self._start(secret), found.principal

    def end(self, session_id: str | None) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)

    @staticmethod
    def csrf_ok(caller: Caller, sent: str | None) -> bool:
        """A change by cookie must carry the session's CSRF token; by bearer header, nothing is ambient."""
        if caller.session_id is None:
            return True
        return bool(sent) and caller.csrf is not None and hmac.compare_digest(sent.encode(), caller.csrf.encode())

    def _who(self, session: Session) -> Who | None:
        if session.secret is not None:
            return self.authenticate(session.secret)
        local = self.anonymous() if self.anonymous is not None else None  # the owner's, until tokens exist
        return None if local is None else Who(local)

    def _get(self, session_id: str) -> Session | None:
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or now - session.used > SESSION_FOR:
                self._sessions.pop(session_id, None)
                return None
            session.used = now
            return session

    def _start(self, secret: str | None) -> str:
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions, key=lambda k: self._sessions[k].used)
                del self._sessions[oldest]
            self._sessions[session_id] = Session(secret, secrets.token_urlsafe(32), time.monotonic())
        return session_id
