"""Bearer authentication and the loopback rule, without a server."""

from __future__ import annotations

import pytest

from rewake.errors import DomainError
from rewake.security.auth import authenticate
from rewake.settings import Settings

OPS = "ops-secret-0123456789"
CI = "ci-secret-0123456789"


def settings(tokens: str | None) -> Settings:
    return Settings(api_tokens=tokens, database_url="sqlite://")


def test_token_name_is_the_actor() -> None:
    """The name before the colon is who acts."""
    config = settings(f"ops:{OPS},ci:{CI}")
    assert authenticate(config, "203.0.113.9", f"Bearer {CI}") == "ci"
    assert authenticate(config, "203.0.113.9", f"bearer  {OPS} ") == "ops"


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer nope", f"Token {OPS}", f"Bearer {OPS[:-1]}"]
)
def test_wrong_or_missing_token_is_unauthorized(header: str) -> None:
    """No token, another scheme or an unknown secret is 401 unauthorized."""
    with pytest.raises(DomainError) as refused:
        authenticate(settings(f"ops:{OPS}"), "127.0.0.1", header)
    assert refused.value.code == "unauthorized"


@pytest.mark.parametrize("host", ["10.0.0.5", "203.0.113.9", "", "testclient"])
def test_without_tokens_only_loopback_is_served(host: str) -> None:
    """With no token configured a caller from another address is 403 loopback_only."""
    with pytest.raises(DomainError) as refused:
        authenticate(settings(None), host, "")
    assert refused.value.code == "loopback_only"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1"])
def test_without_tokens_loopback_acts_as_local(host: str) -> None:
    """With no token configured a loopback caller is let in as `local`."""
    assert authenticate(settings(None), host, "") == "local"
