"""Service settings: REWAKE_ names, token pairs, database URLs and loopback addresses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rewake.settings import Settings, is_loopback, normalize_database_url, parse_tokens


def test_defaults_work_with_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every setting has a working default: SQLite here, loopback, port 8600, log executor."""
    for name in list(__import__("os").environ):
        if name.startswith("REWAKE_"):
            monkeypatch.delenv(name)
    settings = Settings()
    assert settings.sqlalchemy_url == "sqlite:///rewake.db"
    assert (settings.host, settings.port, settings.executor) == ("127.0.0.1", 8600, "log")
    assert (settings.sweep_interval_s, settings.resume_delay_s) == (30, 30)
    assert settings.tokens == {}
    assert settings.tombstone_retention_days == 365


def test_settings_read_rewake_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment names are DESIGN.md's: REWAKE_ and the field name."""
    monkeypatch.setenv("REWAKE_API_TOKENS", "ops:s3cret, ci:other")
    monkeypatch.setenv("REWAKE_RESUME_DELAY_S", "45")
    monkeypatch.setenv("REWAKE_DISPLAY_ZONE", "Europe/Berlin")
    monkeypatch.setenv("REWAKE_DATABASE_URL", "postgresql://u@h/db")
    settings = Settings()
    assert settings.tokens == {"ops": "s3cret", "ci": "other"}
    assert settings.resume_delay_s == 45
    assert settings.sqlalchemy_url == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize("value", ["nocolon", ":secret", "name:", "a:b,a:c", "bad name:x"])
def test_malformed_tokens_are_refused(value: str) -> None:
    """Token pairs must be name:secret, with each name once."""
    with pytest.raises(ValueError):
        parse_tokens(value)
    with pytest.raises(ValidationError):
        Settings(api_tokens=value)


def test_unknown_display_zone_is_refused() -> None:
    """REWAKE_DISPLAY_ZONE must be an IANA zone."""
    with pytest.raises(ValidationError):
        Settings(display_zone="Mars/Olympus")


def test_database_urls() -> None:
    """postgres:// and postgresql:// mean psycopg 3; other URLs are left alone."""
    assert normalize_database_url("postgres://h/d") == "postgresql+psycopg://h/d"
    assert normalize_database_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("0.0.0.0", False), ("192.168.1.5", False), ("example.com", False), ("::", False)],
)  # fmt: skip
def test_loopback_addresses(host: str, loopback: bool) -> None:
    """Only loopback addresses may be bound without tokens."""
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("settings", "claims"),
    [
        # 16 workers, 5 s a send at most, 10 s a lease: two sends a worker a lease.
        ({"executor": "webhook", "webhook_timeout_s": 5, "sweep_lease_s": 10}, 32),
        # The default 30 s timeout and 120 s lease: four a worker, the most a worker holds.
        ({"executor": "webhook"}, 64),
        # A lease barely over the timeout (the lease is at least timeout + 5 s): one a worker.
        ({"executor": "webhook", "webhook_timeout_s": 60, "sweep_lease_s": 10}, 16),
        ({"executor": "log"}, 64),
    ],
)
def test_sweeper_claims_only_what_its_workers_send_within_a_lease(
    settings: dict[str, object], claims: int
) -> None:
    """A sweeper holds at most the claims its workers can send within one lease, each send
    taking up to the executor's deadline, and never more than four a worker."""
    from rewake.sweeper.config import SweeperConfig

    config = SweeperConfig.from_settings(Settings(**settings))  # type: ignore[arg-type]
    assert config.claim_limit == claims
