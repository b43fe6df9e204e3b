"""Who is calling, per tool call: the transport says it, the call's use cases receive it.

HTTP puts the principal its bearer token maps to in the request's ASGI state (entrypoints/auth.py);
stdio and the local socket are the local owner. ``run_tool`` opens a ``Call`` for the duration of a
call; ``Toolbox.use`` hands its ``RequestContext`` to every use case that takes one (a ``context``
field), so the domain never reads it from anywhere but its own arguments.
"""

from __future__ import annotations

import contextvars
import dataclasses
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from domain.access.principal import Principal, RequestContext

T = TypeVar("T")
STATE_KEY = "memtrove_principal"

_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("memtrove_request", default=None)


def transport_principal(ctx: Any, local: Principal) -> Principal:
    """The principal of the HTTP request a call came on (set by the auth middleware), else the local owner."""
    request = getattr(getattr(ctx, "request_context", None), "request", None)
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    found = state.get(STATE_KEY) if isinstance(state, dict) else None
    return found if isinstance(found, Principal) else local


@contextmanager
def call(principal: Principal) -> Iterator[RequestContext]:
    """The request context of one tool call, current while the call runs (in its thread)."""
    context = RequestContext(principal=principal, request_id=uuid.uuid4().hex[:16])
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def current(local: Principal) -> RequestContext:
    """The running call's context; outside a call (background work), the local owner's."""
    return _current.get() or RequestContext(principal=local)


def takes_context(kind: Any) -> bool:
    return dataclasses.is_dataclass(kind) and any(f.name == "context" for f in dataclasses.fields(kind))


def with_context(builder: Callable[..., T], made: Any, context: Callable[[], RequestContext]) -> Callable[..., T]:
    """``builder`` (a provider of use case ``made``), passing the call's context when the use case takes one."""
    if not takes_context(made):
        return builder

    def build(*args: Any, **kwargs: Any) -> T:
        kwargs.setdefault("context", context())
        return builder(*args, **kwargs)
    return build
