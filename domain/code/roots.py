"""Which directories index_codebase may read (issue 41.1).

The server's roots (MEMTROVE_CODE_ROOTS) bound everything: a client's declared MCP roots can only
narrow them (a client root inside a server root narrows to it, one holding a server root keeps it,
one elsewhere adds nothing). Without server roots, a client's roots are trusted only when the client
is the local owner's, on this machine (stdio, the local socket); over HTTP a client's roots name
paths on its own machine and are never consulted, so there no code is indexed without server roots.
A path outside the allowed roots gets one message, whatever the path is (missing, a file, a link).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.errors import ValidationError

OUTSIDE = ("path is outside the directories this server allows indexing (MEMTROVE_CODE_ROOTS on the server, "
           "narrowed by the MCP roots a local client declares)")
NO_ROOTS = ("no roots allow indexing: the client declared none and MEMTROVE_CODE_ROOTS is not set on the server")
NO_HTTP_ROOTS = ("code indexing over HTTP needs MEMTROVE_CODE_ROOTS set on the server (the directories it may "
                 "index): a client's own roots are not trusted over HTTP")


@dataclass(frozen=True, slots=True)
class Roots:
    """The roots of one call: the server's, the client's declared ones (None: declared none, or not
    asked), and whether the call came over HTTP (``remote``: the client's are then not consulted)."""

    server: tuple[str, ...] = ()
    client: tuple[str, ...] | None = None
    remote: bool = False


def inside(path: str, root: str) -> bool:
    """Whether the absolute, resolved ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def allowed(server: Sequence[str], client: Sequence[str] | None, remote: bool) -> list[str]:
    """The resolved roots a path must lie under (possibly none: a client narrowing to nothing), from
    resolved server and client roots; ValidationError on ``path`` when the call may index nothing."""
    if remote:
        if not server:
            raise ValidationError("path", NO_HTTP_ROOTS)
        return list(dict.fromkeys(server))
    if not server:
        if not client:
            raise ValidationError("path", NO_ROOTS)
        return list(dict.fromkeys(client))
    if not client:
        return list(dict.fromkeys(server))
    narrowed = [c if inside(c, s) else s for c in client for s in server if inside(c, s) or inside(s, c)]
    return list(dict.fromkeys(narrowed))
