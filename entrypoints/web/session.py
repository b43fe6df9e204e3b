"""Who a page request is, under the same rules as /mcp (entrypoints/auth.py).

A request names its principal by ``Authorization: Bearer`` (scripts), or by a session cookie a browser
got from the login form (a token's secret, kept server-side and checked again on every request, so a
revoked token ends its sessions at once) or, on a loopback server with no token yet, at its first page
(the local owner, while ``anonymous`` still says so). A form that changes anything carries the session's
CSRF token; the cookie is HttpOnly and SameSite=Strict, so another site's page can neither read it nor
send it along.

Each client (a token, the shared token, the local owner) keeps at most SESSIONS_PER_CLIENT sessions: a
login past that ends that client's least recently used one, never another client's (a token holder
signing in again and again cannot sign anyone else out). An address whose sign-ins failed
FAILED_LOGINS times within LOGIN_WINDOW seconds is refused until the oldest failure ages out.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from domain.access.principal import Principal
from entrypoints.auth import Anonymous, Authenticator, Who

COOKIE = "memtrove_session"
SESSION_FOR = 12 * 3600.0  # seconds a session lasts after its last use
SESSIONS_PER_CLIENT = 100  # a client's least recently used session is dropped past this (memory stays bounded)
LOCAL_CLIENT = "local owner"  # the client of sessions made without a token (a loopback server without tokens)
FAILED_LOGINS = 10  # failed sign-ins an address may make within LOGIN_WINDOW seconds
LOGIN_WINDOW = 60.0
MAX_ADDRESSES = 10_000  # addresses whose recent failures are remembered (the longest quiet forgotten first)


@dataclass(slots=True)
class Session:
    secret: str | None  # None: the local owner's (no token was given)
    csrf: str
    used: float
    client: str  # whose sessions it counts among: its token's id, "shared token", LOCAL_CLIENT


class Throttled(Exception):
    """Too many failed sign-ins from one address lately: ``seconds`` until the next may be tried."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"try again in {seconds:.0f} s")
        self.seconds = seconds


class LoginThrottle:
    """Failed sign-ins by address: FAILED_LOGINS within LOGIN_WINDOW seconds, then refused (not even
    checked) until the oldest of them is LOGIN_WINDOW seconds old."""

    def __init__(self) -> None:
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            failures = self._failures.get(address)
            while failures and now - failures[0] >= LOGIN_WINDOW:
                failures.popleft()
            if failures is not None and not failures:
                del self._failures[address]
            elif failures is not None and len(failures) >= FAILED_LOGINS:
                raise Throttled(max(1.0, LOGIN_WINDOW - (now - failures[0])))

    def failed(self, address: str) -> None:
        with self._lock:
            self._failures.setdefault(address, deque(maxlen=FAILED_LOGINS)).append(time.monotonic())
            self._failures.move_to_end(address)
            while len(self._failures) > MAX_ADDRESSES:
                self._failures.popitem(last=False)


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
        self._of_client: dict[str, set[str]] = {}  # client -> its session ids
        self._lock = threading.Lock()
        self.throttle = LoginThrottle()

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
        session_id, csrf = self._start(None, LOCAL_CLIENT)
        return Caller(local, session_id, csrf, new=True)

    def login(self, secret: str, address: str = "") -> tuple[str, Principal] | None:
        """A new session for the token ``secret``; None when it names nobody (missing, wrong or revoked).
        Throttled (the secret unchecked) when sign-ins from ``address`` failed too often lately."""
        self.throttle.check(address)
        found = self.authenticate(secret) if secret else None
        if found is None:
            self.throttle.failed(address)
            return None
        return self._start(secret, found.via or found.principal.user_id)[0], found.principal

    def end(self, session_id: str | None) -> None:
        with self._lock:
            self._drop(session_id or "")

    def _drop(self, session_id: str) -> None:
        """(Under the lock.)"""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            mine = self._of_client.get(session.client, set())
            mine.discard(session_id)
            if not mine:
                self._of_client.pop(session.client, None)

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
                self._drop(session_id)
                return None
            session.used = now
            return session

    def _start(self, secret: str | None, client: str) -> tuple[str, str]:
        """A new session of ``client`` (its id and CSRF token); past SESSIONS_PER_CLIENT, the client's own
        expired and least recently used sessions make room, never another client's."""
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            mine = self._of_client.setdefault(client, set())
            for stale in [k for k in mine if now - self._sessions[k].used > SESSION_FOR]:
                self._drop(stale)
            mine = self._of_client.setdefault(client, set())
            while len(mine) >= SESSIONS_PER_CLIENT:
                self._drop(min(mine, key=lambda k: self._sessions[k].used))
            self._sessions[session_id] = Session(secret, csrf, now, client)
            mine.add(session_id)
        return session_id, csrf
