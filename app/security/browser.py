"""Where the web page's sign-in cookie stands in for a bearer token, and how a page refused
by `rewake.api.deps.Auth` is answered.

The cookie holds a token's secret (HttpOnly, SameSite=Strict). It is honoured only where a
request from another site cannot make use of it:
- GET and HEAD of the pages themselves, which only read;
- API calls that carry `X-Rewake-Page: 1`. A browser sends a custom header across sites only
  after a CORS preflight, which rewake never grants, so a form on another site cannot reach
  the API with the cookie even where a browser ignores SameSite.

A bearer token in `Authorization` always wins; the cookie is read only without one.

With no token configured, loopback is the only credential, so two more rules keep other sites
from borrowing a local browser: no cross-site writes, and no Host but a loopback name (DNS
rebinding). This module imports nothing from `rewake.api`, which imports it.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from rewake.errors import DomainError
from rewake.settings import is_loopback

#: The cookie that holds the signed-in token's secret.
COOKIE = "rewake_token"
#: The header the page's own fetch calls send; a cross-site form cannot set it.
PAGE_HEADER = b"x-rewake-page"
#: Paths served without any credentials: the sign-in form and the static files.
SIGN_IN_PATH = "/sign-in"
OPEN_PATHS = frozenset({SIGN_IN_PATH, "/sign-out"})
STATIC_PREFIX = "/static/"

_SAFE_METHODS = frozenset({"GET", "HEAD"})


def is_open(path: str) -> bool:
    """The sign-in form and static files need no credentials (they reveal nothing)."""
    return path in OPEN_PATHS or path.startswith(STATIC_PREFIX)


def is_page(path: str) -> bool:
    """A path a browser opens as a page: the list, the session pages, the API docs and the
    OpenAPI document they load."""
    return path in ("/", "/docs", "/openapi.json") or path.startswith("/sessions/")


def cookie_secret(headers: dict[bytes, bytes]) -> str | None:
    """The secret the sign-in cookie holds, if the request carries one."""
    raw = headers.get(b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw.decode("latin-1"))
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None and morsel.value else None


def cookie_authorization(method: str, path: str, headers: dict[bytes, bytes]) -> str:
    """`Bearer <secret>` from the cookie where the cookie counts (see the module doc), else ""."""
    page_read = method in _SAFE_METHODS and is_page(path)
    page_call = path.startswith("/api/") and headers.get(PAGE_HEADER) == b"1"
    if not (page_read or page_call):
        return ""
    secret = cookie_secret(headers)
    return f"Bearer {secret}" if secret else ""


def is_cross_site_write(method: str, headers: dict[bytes, bytes]) -> bool:
    """A browser says another site sent this request, and it would change something.

    With no token configured, the API trusts whoever reaches it on loopback; a browser on this
    machine must not lend that trust to a form or fetch from another site. Links from other
    sites (GET) still open the page."""
    return method not in _SAFE_METHODS and headers.get(b"sec-fetch-site") == b"cross-site"


def is_loopback_host(host: str) -> bool:
    """`Host` names this machine: localhost, 127.x.y.z or ::1 (bracketed or not), any port.

    With no token configured, a loopback caller is trusted; DNS rebinding lets another site
    point its own name at 127.0.0.1, so its page reaches rewake from a loopback address but
    under its own name. Refusing other names closes that door."""
    name = host.strip()
    if name.startswith("["):  # [::1] or [::1]:8600
        name, bracket, _ = name[1:].partition("]")
        if not bracket:
            return False
    elif name.count(":") == 1:  # name:port; two or more colons is a bare IPv6 address
        name, _, port = name.partition(":")
        if not port.isdigit():
            return False
    return bool(name) and is_loopback(name)


def refuse_foreign_host(headers: dict[bytes, bytes]) -> None:
    """With no token configured: DomainError `loopback_only` unless `Host` is loopback."""
    host = headers.get(b"host", b"").decode("latin-1")
    if not is_loopback_host(host):
        raise DomainError(
            "loopback_only",
            f"Host header {host[:100]!r} is not a loopback name; with no token configured "
            "rewake answers loopback names only (127.0.0.1, localhost, [::1])",
        )


