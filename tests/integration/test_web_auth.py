"""Who may see the web page and act through it: the sign-in form and its cookie, the rule that
the cookie counts for the API only with `X-Rewake-Page: 1` (so another site's form cannot use
it), the bearer path unchanged, and the loopback rule when no token is configured."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from rewake.security.browser import COOKIE
from tests.support.api import ALICE, Api, loopback_client
from tests.support.reports import failure, runs_url

SECRET = "alice-secret-0123456789"
PAGE_CALL = {"X-Rewake-Page": "1"}


class Browsers:
    """Clients that, like a browser, send no Authorization header, only the cookie; closed
    after the test."""

    def __init__(self) -> None:
        self.opened: list[httpx.Client] = []

    def __call__(self, api: Api, cookie: str | None = SECRET) -> httpx.Client:
        cookies = {COOKIE: cookie} if cookie else None
        client = loopback_client(api.url, cookies=cookies, follow_redirects=False)
        self.opened.append(client)
        return client


@pytest.fixture
def browser() -> Iterator[Browsers]:
    browsers = Browsers()
    yield browsers
    for client in browsers.opened:
        client.close()


def paused(site: Api, root_id: str) -> None:
    with site.client() as http:
        assert http.post(runs_url(root_id), json=failure()).status_code == 201


def test_a_page_without_a_sign_in_goes_to_the_form(browser: Browsers, site: Api) -> None:
    """With tokens configured, a page asked for without a cookie redirects to the sign-in form,
    which comes back to the page."""
    answer = browser(site, None).get("/sessions/x?y=1")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/sign-in?next=%2Fsessions%2Fx%3Fy%3D1&why=needed"
    form = browser(site, None).get(answer.headers["location"])
    assert form.status_code == 200
    assert 'name="next" value="/sessions/x?y=1"' in form.text


def test_the_cookie_opens_the_pages(browser: Browsers, site: Api) -> None:
    """The sign-in cookie stands in for the bearer token on the pages."""
    assert browser(site).get("/").status_code == 200


def test_a_cookie_no_token_matches_goes_back_to_the_form(browser: Browsers, site: Api) -> None:
    """A cookie from a rotated token sends the browser to sign in again, saying why."""
    answer = browser(site, "rotated-away").get("/")
    assert answer.status_code == 303
    assert answer.headers["location"].endswith("why=expired")
    assert "no longer matches" in browser(site, None).get(answer.headers["location"]).text


def test_the_cookie_acts_on_the_api_only_with_the_page_header(
    browser: Browsers, site: Api, root_id: str
) -> None:
    """Without X-Rewake-Page: 1 the cookie does not authenticate an API call (a form on another
    site cannot set that header); with it, the call acts as the token's name."""
    paused(site, root_id)
    url = f"/api/agent/runs/{root_id}/auto-resume"
    client = browser(site)
    for headers in ({}, {"X-Rewake-Page": "0"}, {"X-Rewake-Page": "true"}):
        refused = client.put(url, json={"enabled": True}, headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
    armed = client.put(url, json={"enabled": True}, headers=PAGE_CALL)
    assert (armed.status_code, armed.json()["armed_by"]) == (200, "alice")


def test_the_cookie_does_not_open_operations_routes(browser: Browsers, site: Api) -> None:
    """Only the pages and /api/ calls from the page take the cookie; /readyz and /metrics do not."""
    for path in ("/readyz", "/metrics"):
        assert browser(site).get(path, headers=PAGE_CALL).status_code == 401


def test_a_bearer_token_still_decides_when_one_is_sent(browser: Browsers, site: Api) -> None:
    """A wrong bearer token is refused even beside a good cookie: the header always wins."""
    wrong = {"Authorization": "Bearer nope", **PAGE_CALL}
    answer = browser(site).get("/api/agent/runs", headers=wrong)
    assert (answer.status_code, answer.json()["code"]) == (401, "unauthorized")
    assert browser(site, None).get("/api/agent/runs", headers=ALICE).status_code == 200


@pytest.mark.parametrize("token", [f"alice:{SECRET}", SECRET])
def test_signing_in_sets_a_strict_http_only_cookie(
    browser: Browsers, site: Api, token: str
) -> None:
    """The form takes `name:secret` or the secret alone and keeps the secret in an HttpOnly,
    SameSite=Strict cookie, then goes where it was sent from."""
    answer = browser(site, None).post("/sign-in", data={"token": token, "next": "/sessions/a"})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/sessions/a"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={SECRET};")
    for attribute in ("HttpOnly", "Path=/", "SameSite=strict", "Max-Age="):
        assert attribute in cookie


@pytest.mark.parametrize(
    ("token", "words"),
    [
        ("alice:wrong", "the bearer token matches no configured token"),
        (f"bob:{SECRET}", "the bearer token matches no configured token"),
        ("", "enter a token: name:secret"),
    ],
)
def test_a_wrong_token_is_refused_in_words(
    browser: Browsers, site: Api, token: str, words: str
) -> None:
    """A wrong token, another name's secret, or none: the form again, with the reason."""
    answer = browser(site, None).post("/sign-in", data={"token": token, "next": "/"})
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    assert f'role="alert">Not signed in: {words}' in answer.text


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil", "x"])
def test_sign_in_only_returns_to_this_site(browser: Browsers, site: Api, target: str) -> None:
    """The page to return to must be a path here; anything else returns to the list."""
    data = {"token": SECRET, "next": target}
    assert browser(site, None).post("/sign-in", data=data).headers["location"] == "/"


def test_another_site_cannot_post_the_sign_in_form(browser: Browsers, site: Api) -> None:
    """A sign-in posted from another origin is refused: no cookie is set."""
    answer = browser(site, None).post(
        "/sign-in", data={"token": SECRET}, headers={"Origin": "https://evil.example"}
    )
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_signing_out_clears_the_cookie(browser: Browsers, site: Api) -> None:
    """Sign out removes the cookie and shows the form."""
    answer = browser(site).post("/sign-out")
    assert (answer.status_code, answer.headers["location"]) == (303, "/sign-in")
    assert answer.headers["set-cookie"].startswith(f'{COOKIE}="";')


def test_without_tokens_loopback_sees_the_page_without_signing_in(
    browser: Browsers, open_site: Api
) -> None:
    """With no token configured there is no sign-in: loopback browsers see the page."""
    assert browser(open_site, None).get("/").status_code == 200
    answer = browser(open_site, None).get("/sign-in?next=/sessions/a")
    assert (answer.status_code, answer.headers["location"]) == (303, "/sessions/a")


def test_without_tokens_another_site_cannot_act_through_a_local_browser(
    browser: Browsers, open_site: Api, root_id: str
) -> None:
    """With no token, a write that a browser says came from another site is refused (403),
    while a link from another site still opens the page."""
    paused(open_site, root_id)
    cross = {"Sec-Fetch-Site": "cross-site"}
    client = browser(open_site, None)
    refused = client.post(f"/api/agent/runs/{root_id}/cancel", headers=cross)
    assert (refused.status_code, refused.json()["code"]) == (403, "loopback_only")
    assert client.get("/", headers=cross).status_code == 200
    same = client.post(
        f"/api/agent/runs/{root_id}/cancel", headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert same.status_code == 200


def test_without_tokens_another_machine_gets_a_page_that_says_why(open_site: Api) -> None:
    """A page asked for from another address is a 403 page in words, not JSON."""
    from rewake.main import create_app
    from rewake.settings import Settings

    app = create_app(Settings(database_url="sqlite://"), database=open_site.database)

    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://rewake") as client:
            return await client.get("/")

    answer = asyncio.run(fetch())
    assert answer.status_code == 403
    assert answer.headers["content-type"].startswith("text/html")
    assert "only this machine may call the API" in answer.text


def _another_port(url: str) -> str:
    host, _, port = url.rpartition(":")
    return f"{host}:{int(port) % 65535 + 1}"


@pytest.mark.parametrize(
    "foreign",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "ANOTHER_PORT"},
        {"Origin": "http://localhost:8600.evil.example"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"},
    ],
)
def test_without_tokens_a_write_from_another_origin_is_refused(
    browser: Browsers, open_site: Api, root_id: str, foreign: dict[str, str]
) -> None:
    """With no token, a write whose Origin is not the server's own loopback origin is refused
    (403 loopback_only) even when the browser sends no Sec-Fetch-Site, and so is a same-site
    one (another port on 127.0.0.1); the session is untouched."""
    paused(open_site, root_id)
    headers = {k: _another_port(open_site.url) if v == "ANOTHER_PORT" else v
               for k, v in foreign.items()}  # fmt: skip
    client = browser(open_site, None)
    refused = client.post(f"/api/agent/runs/{root_id}/cancel", headers=headers)
    assert (refused.status_code, refused.json()["code"]) == (403, "loopback_only")
    assert client.get(f"/api/agent/runs/{root_id}").json()["state"] == "paused"


@pytest.mark.parametrize("own", ["ORIGIN", "NONE"])
def test_without_tokens_a_write_from_the_servers_own_origin_is_served(
    browser: Browsers, open_site: Api, root_id: str, own: str
) -> None:
    """The page's own writes (Origin equal to the server's, same-origin) and clients that send
    no Origin at all (curl, rewake run) still act."""
    paused(open_site, root_id)
    headers = {"Origin": open_site.url, "Sec-Fetch-Site": "same-origin"} if own == "ORIGIN" else {}
    answer = browser(open_site, None).post(f"/api/agent/runs/{root_id}/cancel", headers=headers)
    assert answer.status_code == 200, answer.text
