"""Rendering: the Jinja2 templates, and times as the server writes them before the browser's
script shows them in the viewer's own zone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates
from starlette.types import Scope

from rewake.context import iso
from rewake.errors import CODES, DomainError
from rewake.instants import parse_instant
from rewake.reports.banners import describe_wait, format_local
from rewake.security.browser import COOKIE, SIGN_IN_PATH, cookie_secret
from rewake.web.cards import REFUSAL_WORDS

HERE = Path(__file__).parent
TEMPLATES = Jinja2Templates(directory=HERE / "templates")
STATIC_DIR = HERE / "static"


@dataclass(frozen=True, slots=True)
class Times:
    """Times as the server renders them: `<time datetime="<UTC ISO>">` holding the time in the
    display zone (REWAKE_DISPLAY_ZONE), which the page's script replaces with the viewer's own
    zone; countdowns hold the wait as of the request, and the script makes them live."""

    now: datetime
    zone: tzinfo | None

    @property
    def now_iso(self) -> str | None:
        return iso(self.now)

    @property
    def zone_name(self) -> str:
        key = getattr(self.zone, "key", None)
        return str(key) if key else (self.now.astimezone(self.zone).tzname() or "UTC")

    def at(self, instant: str | None) -> Markup:
        """`<time>` for an instant (an ISO string from the API); an em dash for none."""
        if not instant:
            return Markup("—")
        shown = format_local(parse_instant(instant), self.zone, self.now)
        return Markup('<time datetime="{}" data-local>{}</time>').format(instant, shown)

    def text(self, instant: str) -> str:
        """An instant as plain text in the display zone, zone named ("17:00 CET")."""
        return format_local(parse_instant(instant), self.zone, self.now)

    def hour(self, instant: str) -> str:
        """An instant's clock time in the display zone ("18:00"), for the picture's axis."""
        return parse_instant(instant).astimezone(self.zone).strftime("%H:%M")

    def passed(self, instant: str) -> bool:
        """Whether `instant` is behind the request's `now` (a reset that already happened)."""
        return parse_instant(instant) <= self.now

    def countdown(self, instant: str | None, past: str = "already passed") -> Markup:
        """A live countdown to `instant`; `past` is what it says once the instant is behind."""
        if not instant:
            return Markup("")
        wait = describe_wait(parse_instant(instant), self.now)
        text = past if wait == "already passed" else wait
        return Markup('<span class="countdown" data-until="{}" data-past="{}">{}</span>').format(
            instant, past, text
        )


def page(
    request: Request, template: str, context: dict[str, Any], *, status: int = 200
) -> HTMLResponse:
    """A page, with what every page's layout uses."""
    full = {"refusal_words": json.dumps(REFUSAL_WORDS), "signed_in": _signed_in(request)}
    return TEMPLATES.TemplateResponse(request, template, full | context, status_code=status)


def error_html(status: int, code: str, detail: str) -> str:
    """An error page's HTML, for refusals answered before a route runs."""
    template = TEMPLATES.get_template("error.html")
    return template.render(_error_context(status, code, detail))


def error_page(request: Request, status: int, code: str, detail: str) -> HTMLResponse:
    """An error page for a request a page route could not answer, counted as the API counts
    its problems."""
    request.app.state.services.metrics.problem(code)
    return page(request, "error.html", _error_context(status, code, detail), status=status)


#: Error pages' headings, where the API's title reads oddly on a page.
PAGE_TITLES = {
    "session_not_found": "No such session",
    "not_found": "No such page",
    "invalid_request": "That address asks for something the page cannot show",
    "unauthorized": "Not signed in",
    "loopback_only": "Only this machine may open this page",
}


def _error_context(status: int, code: str, detail: str) -> dict[str, Any]:
    title = PAGE_TITLES.get(code) or (CODES[code][1] if code in CODES else code.replace("_", " "))
    return {
        "status": status,
        "code": code,
        "title": title[:1].upper() + title[1:],
        "detail": detail,
        "refusal_words": json.dumps(REFUSAL_WORDS),
        "signed_in": False,
    }


def _signed_in(request: Request) -> bool:
    """Whether the page was reached with the sign-in cookie (then it offers to sign out)."""
    return COOKIE in request.cookies


def page_refusal(refused: DomainError, scope: Scope) -> Response:
    """What a browser is shown when a page is refused: the sign-in form when a token is
    needed (saying whether the cookie it sent no longer counts), else the reason in words."""
    if refused.code == "unauthorized":
        query = scope.get("query_string", b"").decode("latin-1")
        target = scope["path"] + ("?" + query if query else "")
        why = "expired" if cookie_secret(dict(scope.get("headers", ()))) else "needed"
        return RedirectResponse(
            f"{SIGN_IN_PATH}?next={quote(target, safe='')}&why={why}", status_code=303
        )
    html = error_html(refused.status, refused.code, refused.detail)
    return HTMLResponse(html, status_code=refused.status)
