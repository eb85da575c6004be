"""The viewer's web app (Starlette): pages rendered by Jinja2 with autoescape, one static
script, and a small JSON endpoint the live pages poll.

Security (docs/viewer.md#security): a run's contents are written by an untrusted agent, and
the server can read every run under its directory, so

- every request needs the session's token: in the query once (answered with a redirect that
  drops it from the address bar and sets an HttpOnly, SameSite=Strict cookie), then the cookie;
  anything else gets 403 with no content from a run;
- only a ``Host`` of the loopback address (or ``localhost``) with the served port is answered
  (a DNS-rebinding page cannot read it with its own name);
- every string goes through autoescape; no data is placed in a script, a style or an event
  handler attribute; a Content-Security-Policy allows scripts from the server's own static
  file only, so a script an agent smuggled into a page cannot run;
- pages name runs by their place in the catalog, never by a path from the request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from autorl.errors import AutorlError
from autorl_view.catalog import FILTERS, Catalog, matching

COOKIE_PREFIX = "autorl_view_"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
STATIC = Path(__file__).parent / "static"
POLL_MS = 2000
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def cookie_name(token: str) -> str:
    """The session's cookie: named after its token, since cookies do not tell ports apart (two
    viewers on one machine must not overwrite each other's)."""
    return COOKIE_PREFIX + hashlib.sha256(token.encode()).hexdigest()[:12]


def templates() -> Environment:
    env = Environment(
        loader=PackageLoader("autorl_view", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from autorl_view.runpage import NO_VALUE, duration, plus_minus

    env.globals["no_value"] = NO_VALUE
    env.filters["pm"] = plus_minus
    env.filters["duration"] = duration
    return env


class Guard:
    """ASGI middleware: the token (query once, then cookie), a loopback ``Host``, and the
    security headers on every answer."""

    def __init__(self, app: Any, token: str, hosts: set[str] | None = None) -> None:
        self.app, self.token, self.hosts = app, token, hosts
        self.cookie = cookie_name(token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        host = request.headers.get("host", "")
        if not _loopback(host, self.hosts):
            await _secured(PlainTextResponse("unknown host", 403))(scope, receive, send)
            return
        given = request.query_params.get("token")
        if given is not None and _same(given, self.token):
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            response = RedirectResponse(target, 303)
            response.set_cookie(
                self.cookie, self.token, httponly=True, samesite="strict", path="/", secure=False
            )
            await _secured(response)(scope, receive, send)
            return
        if not _same(request.cookies.get(self.cookie, ""), self.token):
            text = "forbidden: open the URL autorl view printed (it holds the session's token)"
            await _secured(PlainTextResponse(text, 403))(scope, receive, send)
            return

        async def send_secured(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.decode("latin-1").lower() not in {h.lower() for h in HEADERS}
                ]
                headers += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)


def _loopback(host: str, hosts: set[str] | None) -> bool:
    if hosts is not None:
        return host in hosts
    return host.rpartition(":")[0] in LOOPBACK_NAMES


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _secured(response: Response) -> Response:
    for key, value in HEADERS.items():
        response.headers[key] = value
    return response


def create_app(root: Path, token: str, port: int | None = None) -> Any:
    """The guarded app serving what lies under ``root``; ``port`` pins the accepted ``Host``
    to loopback names with that port (None: any loopback port, for an app whose port is
    chosen after it is built)."""
    catalog = Catalog.open(root)
    env = templates()

    def page(template: str, /, **context: Any) -> Response:
        html = env.get_template(template).render(poll_ms=POLL_MS, **context)
        return Response(html, media_type="text/html; charset=utf-8")

    def not_found(what: str) -> Response:
        return Response(
            env.get_template("missing.html").render(what=what),
            404,
            media_type="text/html; charset=utf-8",
        )

    async def index(request: Request) -> Response:
        """The served run or campaign when the directory is one, else the runs list."""
        catalog.scan()
        if "" in catalog.runs:
            return RedirectResponse("/run/", 303)
        if "" in catalog.campaigns:
            return RedirectResponse("/campaign/", 303)
        return RedirectResponse("/runs", 303)

    async def runs(request: Request) -> Response:
        filters = {k: request.query_params.get(k, "") for k in FILTERS}
        every = catalog.rows()
        rows = matching(every, filters)
        choices = {k: sorted({str(r.get(k)) for r in every if r.get(k)}) for k in FILTERS}
        return page(
            "runs.html",
            root=catalog.root.name,
            rows=rows,
            filters=filters,
            choices=choices,
            campaigns=sorted(catalog.campaigns),
            truncated=catalog.truncated,
        )

    def _run_dir(request: Request) -> tuple[str, Path | None]:
        key = request.path_params.get("key", "").strip("/")
        if key not in catalog.runs:
            catalog.scan()
        return key, catalog.runs.get(key)

    async def run(request: Request) -> Response:
        from autorl_view.runpage import run_page

        key, run_dir = _run_dir(request)
        if run_dir is None:
            return not_found(f"run {key!r}")
        try:
            context = run_page(run_dir)
        except AutorlError as exc:
            return not_found(f"run {key!r}: {exc}")
        return page(
            "run.html",
            key=key,
            campaign=catalog.campaign_of(key),
            live_url="/api/run/" + quote(key),
            **context,
        )

    async def run_live(request: Request) -> Response:
        from autorl_records import load_run

        from autorl_view.runpage import live

        _, run_dir = _run_dir(request)
        if run_dir is None:
            return JSONResponse({"error": "no such run"}, 404)
        return JSONResponse(live(load_run(run_dir)))

    async def campaign(request: Request) -> Response:
        from autorl_view.campaignpage import campaign_page

        key = request.path_params.get("key", "").strip("/")
        if key not in catalog.campaigns:
            catalog.scan()
        folder = catalog.campaigns.get(key)
        if folder is None:
            return not_found(f"campaign {key!r}")
        return page("campaign.html", key=key, **campaign_page(catalog, folder))

    routes = [
        Route("/", index),
        Route("/runs", runs),
        Route("/run/{key:path}", run),
        Route("/api/run/{key:path}", run_live),
        Route("/campaign/{key:path}", campaign),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    hosts = None
    if port is not None:
        hosts = {f"{name}:{port}" for name in LOOPBACK_NAMES}
    return Guard(app, token, hosts)
