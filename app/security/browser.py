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
from borrowing a local browser: no write from another origin (by `Sec-Fetch-Site` or by
`Origin`), and no Host but a loopback name (DNS rebinding). This module imports nothing from
`rewake.api`, which imports it.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlsplit

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


#: `Sec-Fetch-Site` values that mean the request did not come from another origin's page.
_OWN_FETCH_SITES = frozenset({b"same-origin", b"none"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _authority(host: str, scheme: str) -> str:
    """`host[:port]` in lower case, without the scheme's default port."""
    host = host.strip().lower()
    default = _DEFAULT_PORTS.get(scheme)
    if default and host.endswith(f":{default}") and not host.endswith("]"):
        host = host[: -len(default) - 1]
    return host


def is_own_origin(origin: str, host: str) -> bool:
    """`Origin` names the server this request reached (scheme http or https, the same name and
    port as `Host`): the page's own fetch or form. `null` (an opaque origin) never is."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or parts.path not in ("", "/"):
        return False
    if "@" in parts.netloc:
        return False
    return _authority(parts.netloc, parts.scheme) == _authority(host, parts.scheme)


def from_another_origin(headers: dict[bytes, bytes]) -> bool:
    """A browser says a page of another origin sent this request: `Sec-Fetch-Site` other than
    same-origin or none (same-site included: another port on 127.0.0.1 is another site's
    page), or an `Origin` other than this server's. A request with neither header (curl, an
    older browser's form without Origin) is not from another origin by what it says."""
    fetch_site = headers.get(b"sec-fetch-site")
    if fetch_site is not None and fetch_site.lower() not in _OWN_FETCH_SITES:
        return True
    origin = headers.get(b"origin")
    if origin is None:
        return False
    host = headers.get(b"host", b"").decode("latin-1")
    return not is_own_origin(origin.decode("latin-1"), host)


def is_cross_site_write(method: str, headers: dict[bytes, bytes]) -> bool:
    """A write (not GET or HEAD) that a browser says came from anywhere but this server's own
    loopback origin.

    With no token configured, the API trusts whoever reaches it on loopback; a browser on this
    machine must not lend that trust to a form or fetch from another site. Browsers without
    Fetch Metadata still send `Origin` on every cross-origin write, so either header refuses.
    Links from other sites (GET) still open the page."""
    if method in _SAFE_METHODS:
        return False
    if from_another_origin(headers):
        return True
    origin = headers.get(b"origin")
    return origin is not None and not is_loopback_host(urlsplit(origin.decode("latin-1")).netloc)


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
