"""The page at /ui: server-rendered HTML from the same Starlette app as /mcp, over the same tools.

Each view validates the form, calls one tool (entrypoints/web/caller.py) as the request's principal
and renders a template; a refusal is shown beside the field it names, with nothing changed. Pages
work without JavaScript (plain links and forms); the pinned htmx (static/htmx.min.js, 2.0.4) only
adds live progress to an ingest. The Host/Origin checks of /mcp hold here too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from domain.artifacts.input import MAX_CONTENT
from entrypoints.auth import bearer_secret
from entrypoints.runtime import Runtime
from entrypoints.web.caller import ToolCaller, ToolFailed
from entrypoints.web.session import COOKIE, SESSION_FOR, Caller, Sessions, Throttled
from entrypoints.web.text import duration, filesize, highlight, linkable, plural  # noqa: F401 - re-exported

HERE = Path(__file__).parent
PREFIX = "/ui"
# Scripts only from the page's own files (no inline script, no other site's), no framing.
SECURITY_HEADERS = {"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                                               "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
                    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}
# A page's request body: an upload of files up to 10 MB each (artifact_ingest's limit), 20 MB in all.
MAX_PAGE_BODY = 2 * MAX_CONTENT + 1024 * 1024
View = Callable[["Ui", Request, Caller], Awaitable[Response]]


class Refused(Exception):
    """A request the page refuses as a whole (bad CSRF, a form the browser should not send): status and text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Ui:
    """What every view uses: the tools, the templates, the runtime (for health and audit)."""

    def __init__(self, runtime: Runtime, sessions: Sessions, security: TransportSecuritySettings) -> None:
        self.runtime = runtime
        self.sessions = sessions
        self.call = ToolCaller(runtime)
        self.security = TransportSecurityMiddleware(security)
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(),
                                     trim_blocks=True, lstrip_blocks=True)
        self.templates.globals.update(prefix=PREFIX, urlencode=urlencode)
        self.templates.filters.update(highlight=highlight, filesize=filesize, linkable=linkable, plural=plural,
                                     duration=duration)

    def page(self, request: Request, caller: Caller, template: str, status: int = 200, **values: Any) -> Response:
        html = self.templates.get_template(template).render(
            request=request, caller=caller, user=caller.principal.user_id, csrf=caller.csrf or "", status=status,
            **values)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    async def tool(self, caller: Caller, name: str, **arguments: Any) -> dict[str, Any]:
        return await self.call(caller.principal, name, caller.via, **arguments)

    async def start(self, caller: Caller, name: str, **arguments: Any) -> dict[str, Any]:
        """A long tool (an ingest) answered as soon as its work is under way and measured: the page shows
        its progress from there rather than waiting out the call's budget."""
        return await self.call(caller.principal, name, caller.via, answer_when_known=True, **arguments)

    async def form(self, request: Request, caller: Caller, max_part_size: int = 1024 * 1024,
                   max_files: int = 0) -> dict[str, Any]:
        """The posted form, once its CSRF token is checked (refused: 403, nothing done)."""
        form = await request.form(max_files=max_files, max_fields=50, max_part_size=max_part_size)
        if not self.sessions.csrf_ok(caller, form.get("csrf") if isinstance(form.get("csrf"), str) else None):
            raise Refused(403, "This form is out of date or came from another site (CSRF token missing or wrong): "
                               "reload the page and send it again.")
        return dict(form.multi_items()) | {"_files": form.getlist("files")}


def build_ui(runtime: Runtime, sessions: Sessions, security: TransportSecuritySettings) -> Starlette:
    from entrypoints.web import views_admin, views_browse, views_change, views_search, views_timeline

    ui = Ui(runtime, sessions, security)
    routes: list[Route | Mount] = [
        Route("/", lambda request: RedirectResponse(f"{PREFIX}/search", status_code=303)),
        Route("/login", _login(ui), methods=["GET", "POST"]),
        Route("/logout", _guard(ui, _logout), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    for module in (views_search, views_browse, views_timeline, views_change, views_admin):
        for path, view, methods in module.ROUTES:
            routes.append(Route(path, _guard(ui, view), methods=methods))
    return Starlette(routes=routes)


def _guard(ui: Ui, view: View) -> Callable[[Request], Awaitable[Response]]:
    """Host/Origin checked, the caller known (else the login page), CSRF on a change, errors shown."""
    async def endpoint(request: Request) -> Response:
        refused = await ui.security.validate_request(request) or _cross_site(request)
        if refused is not None:
            return refused
        caller = await anyio.to_thread.run_sync(ui.sessions.resolve, bearer_secret(request.scope),
                                                request.cookies.get(COOKIE))
        if caller is None:
            if request.method == "GET" and "authorization" not in request.headers:
                return RedirectResponse(f"{PREFIX}/login?{urlencode({'next': request.url.path})}", status_code=303)
            return _plain(401, "Missing, wrong or revoked token: sign in again at /ui/login.")
        if request.method == "POST" and caller.new:  # a change needs a page first (and its CSRF token)
            response = _plain(403, "No session yet: open the page and send the form from there.")
        else:
            try:
                response = await view(ui, request, caller)
            except Refused as exc:
                response = _plain(exc.status, exc.message)
            except ToolFailed as exc:
                response = ui.page(request, caller, "error.html", status=exc.status, message=exc.message,
                                   field=exc.field, changing=request.method == "POST")
        if caller.new and caller.session_id:
            _set_cookie(response, request, caller.session_id)
        return response
    return endpoint


def _login(ui: Ui) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        refused = await ui.security.validate_request(request) or _cross_site(request)
        if refused is not None:
            return refused
        target = request.query_params.get("next", "")
        target = target if target.startswith(PREFIX + "/") and not target.startswith("//") else f"{PREFIX}/search"
        if request.method == "GET":
            return _login_page(ui, target, None)
        form = await request.form(max_fields=10, max_files=0, max_part_size=4096)
        secret = str(form.get("token") or "").strip()
        address = request.client.host if request.client else ""
        try:
            made = await anyio.to_thread.run_sync(ui.sessions.login, secret, address)
        except Throttled as exc:
            response = _login_page(ui, target, f"Too many failed sign-ins from your address: try again in "
                                               f"{exc.seconds:.0f} s.", status=429)
            response.headers["Retry-After"] = str(int(exc.seconds + 0.999))
            return response
        if made is None:
            return _login_page(ui, target, "That token is missing, wrong or revoked.", status=401)
        response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
        _set_cookie(response, request, made[0])
        return response
    return endpoint


async def _logout(ui: Ui, request: Request, caller: Caller) -> Response:
    await ui.form(request, caller)
    ui.sessions.end(caller.session_id)
    response = RedirectResponse(f"{PREFIX}/login", status_code=303)
    response.delete_cookie(COOKIE, path=PREFIX)
    return response


def _cross_site(request: Request) -> Response | None:
    """A POST whose Origin is not this page's own (also when the Host/Origin allow-list is off, on a
    wildcard bind): refused, so no other site can sign a browser in or change anything."""
    origin = request.headers.get("origin")
    if request.method != "POST" or origin is None:
        return None
    host = request.headers.get("host", "")
    if origin in (f"http://{host}", f"https://{host}"):
        return None
    return _plain(403, "Refused: this form was sent from another site (Origin)")


def _login_page(ui: Ui, target: str, error: str | None, status: int = 200) -> Response:
    html = ui.templates.get_template("login.html").render(target=target, error=error, caller=None, csrf="")
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)  # no framing of the sign-in form


def _set_cookie(response: Response, request: Request, session_id: str) -> None:
    response.set_cookie(COOKIE, session_id, max_age=int(SESSION_FOR), path=PREFIX, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


class UiFirst:
    """Requests for /ui go to the page (which knows its caller by cookie or token itself); the rest on."""

    def __init__(self, ui: ASGIApp, rest: ASGIApp) -> None:
        self.ui = ui
        self.rest = rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == PREFIX:
            await RedirectResponse(f"{PREFIX}/search", status_code=303)(scope, receive, send)
            return
        if path.startswith(PREFIX + "/"):  # Starlette routes on the path past root_path
            await self.ui({**scope, "root_path": scope.get("root_path", "") + PREFIX}, receive, send)
            return
        await self.rest(scope, receive, send)


def _plain(status: int, message: str) -> Response:
    return Response(message, status_code=status, media_type="text/plain; charset=utf-8")
