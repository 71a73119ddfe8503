"""What keeps other sites out when a browser on this machine has rewake open: the Host rule
with no token configured (DNS rebinding), the headers every page carries (no framing, no
sniffing), sign-out only from this page, and a Secure cookie over https."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from rewake.security.browser import COOKIE, is_loopback_host
from tests.support.api import TOKENS, Api, loopback_client
from tests.support.reports import failure, runs_url

SECRET = "alice-secret-0123456789"
HTML = {"Accept": "text/html"}
#: What a page another site pointed at 127.0.0.1 sends: its own name, and same-origin.
REBOUND = {"Host": "evil.example:8600", "Sec-Fetch-Site": "same-origin"}
PAGE_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


def paused(api: Api, root_id: str) -> None:
    with api.client({}) as http:
        assert http.post(runs_url(root_id), json=failure()).status_code == 201


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:8600", "127.9.8.7:1", "localhost", "LocalHost:8600", "[::1]",
     "[::1]:8600", "::1"],
)  # fmt: skip
def test_loopback_host_names(host: str) -> None:
    """Loopback names, with or without a port, are this machine."""
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    ["", "evil.example", "evil.example:8600", "localhost.evil.example", "127.0.0.1.nip.io",
     "0.0.0.0:8600", "[::1", "[::]:8600", "127.0.0.1:http", "10.0.0.1"],
)  # fmt: skip
def test_other_host_names(host: str) -> None:
    """Any other name (or none, or a malformed one) is not."""
    assert not is_loopback_host(host)


def test_without_tokens_a_rebound_name_is_refused(open_site: Api, root_id: str) -> None:
    """With no token, a loopback caller naming another host (DNS rebinding) may neither act nor
    read: 403 loopback_only saying why, as an HTML page for a page address."""
    paused(open_site, root_id)
    with loopback_client(open_site.url, headers=REBOUND) as rebound:
        for answer in (
            rebound.post(f"/api/agent/runs/{root_id}/cancel"),
            rebound.get(f"/api/agent/runs/{root_id}"),
        ):
            assert (answer.status_code, answer.json()["code"]) == (403, "loopback_only")
            assert "'evil.example:8600' is not a loopback name" in answer.json()["detail"]
        page = rebound.get("/", headers=HTML)
    assert page.status_code == 403
    assert page.headers["content-type"].startswith("text/html")
    assert "is not a loopback name" in page.text and "loopback_only" in page.text


@pytest.mark.parametrize("host", ["localhost", "127.0.0.2:1", "[::1]:8600"])
def test_without_tokens_loopback_names_are_served(open_site: Api, host: str) -> None:
    """Loopback names other than the address dialled are served as before."""
    with loopback_client(open_site.url, headers={"Host": host}) as client:
        assert client.get("/api/agent/runs").status_code == 200


def test_with_tokens_any_host_name_is_served(site: Api) -> None:
    """With tokens, the name is not restricted: a proxy may serve rewake under a real name."""
    with site.client() as http:
        assert http.get("/api/agent/runs", headers=REBOUND).status_code == 200


def test_every_kind_of_page_carries_the_hardening_headers(site: Api, open_site: Api) -> None:
    """Pages, error pages, the sign-in form and auth refusals forbid framing and sniffing."""
    cookie = {COOKIE: SECRET}
    with loopback_client(site.url, cookies=cookie, headers=HTML) as browser:
        answers = [
            browser.get("/"),
            browser.get("/sessions/no-such-session"),
            browser.get("/sign-in"),
        ]
    with loopback_client(open_site.url, headers=HTML) as local:
        answers.append(local.get("/nowhere"))
        answers.append(local.get("/", headers=REBOUND))
    assert [a.status_code for a in answers] == [200, 404, 200, 404, 403]
    for answer in answers:
        assert answer.headers["content-type"].startswith("text/html")
        assert {name: answer.headers.get(name) for name in PAGE_HEADERS} == PAGE_HEADERS


@pytest.mark.parametrize(
    "headers",
    [{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}, {"Origin": "null"}],
)
def test_another_site_cannot_sign_a_browser_out(site: Api, headers: dict[str, str]) -> None:
    """A sign-out posted by another site is refused (403) and leaves the cookie alone."""
    with loopback_client(site.url, cookies={COOKIE: SECRET}) as browser:
        answer = browser.post("/sign-out", headers=headers)
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_signing_out_from_this_page_clears_the_cookie(site: Api) -> None:
    """The page's own sign-out (same Origin, same-origin) clears the cookie."""
    own = {"Origin": site.url, "Sec-Fetch-Site": "same-origin"}
    with loopback_client(site.url, cookies={COOKIE: SECRET}) as browser:
        answer = browser.post("/sign-out", headers=own)
    assert answer.status_code == 303
    assert answer.headers["set-cookie"].startswith(f'{COOKIE}="";')


def test_the_cookie_is_secure_over_https(site: Api) -> None:
    """Over https the cookie is set and cleared with Secure; over plain http without."""
    from rewake.main import create_app
    from rewake.settings import Settings

    app = create_app(Settings(database_url="sqlite://", api_tokens=TOKENS), database=site.database)

    async def sign_in_and_out(base: str) -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=base) as client:
            return [
                await client.post("/sign-in", data={"token": SECRET, "next": "/"}),
                await client.post("/sign-out"),
            ]

    for base, secure in (("https://rewake.example", True), ("http://rewake.example", False)):
        for answer in asyncio.run(sign_in_and_out(base)):
            assert answer.status_code == 303
            assert ("; secure" in answer.headers["set-cookie"].lower()) is secure


def test_the_cookie_is_secure_behind_a_local_tls_proxy(site: Api) -> None:
    """uvicorn takes the scheme from a loopback proxy's X-Forwarded-Proto, so the cookie is
    Secure when the proxy says the browser came over https."""
    proxied = {"X-Forwarded-Proto": "https"}
    with loopback_client(site.url, headers=proxied) as proxy:
        answer = proxy.post("/sign-in", data={"token": SECRET, "next": "/"})
    assert answer.status_code == 303
    assert "; secure" in answer.headers["set-cookie"].lower()
