"""The API's docs at /docs and the OpenAPI document at /openapi.json: behind the API's auth
(a bearer token, or the page's sign-in cookie for GET; loopback only with no token
configured), and Swagger UI served from rewake itself."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from rewake.security.browser import COOKIE
from tests.support.api import ALICE, Api, loopback_client

SECRET = "alice-secret-0123456789"
PAGES = ("/docs", "/openapi.json")


@pytest.fixture
def anonymous(site: Api) -> Iterator[httpx.Client]:
    """A client of the server with tokens that sends no credentials and follows no redirect."""
    with loopback_client(site.url, follow_redirects=False) as client:
        yield client


def test_the_docs_and_the_document_need_the_token(anonymous: httpx.Client) -> None:
    """With tokens configured, /docs without credentials sends a browser to sign in and
    /openapi.json is a 401 problem; with the bearer token both answer 200."""
    docs = anonymous.get("/docs")
    assert (docs.status_code, docs.headers["location"]) == (303, "/sign-in?next=%2Fdocs&why=needed")
    document = anonymous.get("/openapi.json")
    assert document.status_code == 401
    assert document.headers["content-type"] == "application/problem+json"
    assert document.json()["code"] == "unauthorized"
    assert document.headers["www-authenticate"].startswith("Bearer")
    docs = anonymous.get("/docs", headers=ALICE)
    assert docs.status_code == 200
    assert docs.headers["content-type"].startswith("text/html")
    assert 'data-openapi-url="/openapi.json"' in docs.text
    document = anonymous.get("/openapi.json", headers=ALICE)
    assert document.status_code == 200
    assert document.json()["openapi"].startswith("3.")


def test_a_wrong_token_opens_neither(anonymous: httpx.Client) -> None:
    """A bearer token that matches no configured one is refused on both."""
    wrong = {"Authorization": "Bearer alice-secret-0123456789x"}
    assert anonymous.get("/docs", headers=wrong).status_code == 303
    assert anonymous.get("/openapi.json", headers=wrong).status_code == 401


def test_the_sign_in_cookie_opens_both_for_reading_only(site: Api) -> None:
    """The sign-in cookie counts on GET /docs and GET /openapi.json (the docs page fetches the
    document with it), not for another method."""
    with loopback_client(site.url, cookies={COOKIE: SECRET}) as browser:
        for path in PAGES:
            assert browser.get(path).status_code == 200, path
        refused = browser.post("/openapi.json")
        assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")


def test_without_tokens_only_loopback_names_see_them(open_site: Api) -> None:
    """With no token configured, a loopback caller needs none; a foreign Host (DNS rebinding)
    is refused as on every route: a page in words for /docs, a problem for the document."""
    rebound = {"Host": "rebound.example"}
    with loopback_client(open_site.url) as client:
        for path in PAGES:
            assert client.get(path).status_code == 200, path
        page = client.get("/docs", headers=rebound)
        assert (page.status_code, page.headers["content-type"][:9]) == (403, "text/html")
        assert "Only this machine may open this page" in page.text
        document = client.get("/openapi.json", headers=rebound)
        assert (document.status_code, document.json()["code"]) == (403, "loopback_only")


def test_the_docs_run_only_this_sites_scripts(anonymous: httpx.Client) -> None:
    """/docs loads Swagger UI and its starter from /static/ (served without credentials), under
    the pages' Content-Security-Policy: no script or stylesheet from another site."""
    docs = anonymous.get("/docs", headers=ALICE)
    assert "default-src 'self'" in docs.headers["content-security-policy"]
    assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert assets and all(asset.startswith("/static/") for asset in assets), assets
    assert "<script>" not in docs.text  # no inline script: the policy would block it
    for asset in assets:
        assert anonymous.get(asset).status_code == 200, asset


def test_the_bearer_scheme_is_declared_only_when_tokens_are_set(site: Api, open_site: Api) -> None:
    """With tokens, every guarded operation asks for the bearer scheme; with none configured
    the document declares no scheme and no operation asks for one (none is sent)."""
    with loopback_client(site.url, headers=ALICE) as client:
        guarded = client.get("/openapi.json").json()
    assert guarded["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    failures = guarded["paths"]["/api/agent/runs/{root_id}/runs/{run_id}/failures"]["post"]
    assert failures["security"] == [{"bearer": []}]
    with loopback_client(open_site.url) as client:
        document = client.get("/openapi.json").json()
    assert "securitySchemes" not in document["components"]
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert operations and not [op for op in operations if "security" in op]
