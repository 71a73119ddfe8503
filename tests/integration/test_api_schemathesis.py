"""Schemathesis generates requests from the OpenAPI schema: none may get a 5xx."""

from __future__ import annotations

import schemathesis
from conftest import ALICE, Api
from hypothesis import HealthCheck, settings

from rewake.main import create_app
from rewake.settings import Settings

# The schema only: no database is opened to build it.
schema = schemathesis.openapi.from_dict(create_app(Settings(database_url="sqlite://")).openapi())


@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_input_gets_a_server_error(case: schemathesis.Case, _served: Api) -> None:
    """Every generated request gets a non-5xx answer (but /readyz's 503), problem+json if 4xx."""
    response = case.call(base_url=_served.url, headers=ALICE)
    not_ready = case.path == "/readyz" and response.status_code == 503
    assert response.status_code < 500 or not_ready, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"] == ["application/problem+json"]
