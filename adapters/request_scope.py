"""The identity port's adapter: the request context of the call running in this thread (or task).

An entrypoint opens a ``scope`` for each call with the principal its transport names (HTTP: the
bearer token's; stdio and the local socket: the local owner); use cases ask ``current`` through the
``Identity`` port the container hands them. Outside any call (background work) it is the local owner.
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from domain.access.principal import Principal, RequestContext

_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("memtrove_request", default=None)


def current() -> RequestContext:
    return _current.get() or RequestContext()


@contextmanager
def scope(principal: Principal, via: str | None = None) -> Iterator[RequestContext]:
    """``principal``'s request context (with a fresh request id; ``via``: the client's token or page),
    current until the block ends."""
    context = RequestContext(principal=principal, request_id=uuid.uuid4().hex[:16], via=via)
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)
