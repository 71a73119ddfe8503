"""Service settings: REWAKE_ names, token pairs, database URLs and loopback addresses."""

from __future__ import annotations

from pathlib import Path

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
    """The environment names are docs/design.md's: REWAKE_ and the field name."""
    monkeypatch.setenv("REWAKE_API_TOKENS", "ops:ops-secret-0123456789, ci:ci-secret-0123456789")
    monkeypatch.setenv("REWAKE_RESUME_DELAY_S", "45")
    monkeypatch.setenv("REWAKE_DISPLAY_ZONE", "Europe/Berlin")
    monkeypatch.setenv("REWAKE_DATABASE_URL", "postgresql://u@h/db")
    settings = Settings()
    assert settings.tokens == {"ops": "ops-secret-0123456789", "ci": "ci-secret-0123456789"}
    assert settings.resume_delay_s == 45
    assert settings.sqlalchemy_url == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize(
    "value",
    ["nocolon", ":secret-0123456789ab", "name:", "a:secret-0123456789ab,a:secret-0123456789cd",
     "bad name:secret-0123456789ab"],
)  # fmt: skip
def test_malformed_tokens_are_refused(value: str) -> None:
    """Token pairs must be name:secret, with each name once."""
    with pytest.raises(ValueError):
        parse_tokens(value)
    with pytest.raises(ValidationError):
        Settings(api_tokens=value)


@pytest.mark.parametrize(
    "value", ["REWAKE_API_TOKENS", "REWAKE_*", "rewake_webhook_secret", "AWS_*,REWAKE_TOKEN",
              "has space", "A-B", "*", "X**"],
)  # fmt: skip
def test_pass_env_never_names_a_rewake_setting(value: str) -> None:
    """REWAKE_PASS_ENV takes variable names (NAME* for a prefix), never one of rewake's own
    settings: the service refuses to start with one, so no secret is passed on by mistake."""
    with pytest.raises(ValidationError):
        Settings(pass_env=value)
    assert Settings(pass_env=" AWS_* , GH_TOKEN,").pass_env == " AWS_* , GH_TOKEN,"


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


def test_postgresql_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """With psycopg absent (as without `rewake[postgres]`), a PostgreSQL URL is refused by name
    and the extra to install; SQLite needs nothing more."""
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)  # `import psycopg` fails
    with pytest.raises(ValidationError, match=r"REWAKE_DATABASE_URL.*rewake\[postgres\]"):
        Settings(database_url="postgresql://u@h/db")
    assert Settings(database_url="sqlite:///x.db").sqlalchemy_url == "sqlite:///x.db"


def test_short_secret_is_refused_by_token_name_without_the_secret() -> None:
    """A secret under 16 characters is refused: the error names REWAKE_API_TOKENS and the
    token, says how to make a secret, and never shows the secret; 16 characters pass."""
    from rewake.settings import explain

    with pytest.raises(ValidationError) as invalid:
        Settings(api_tokens="ops:ops-secret-0123456789,ci:hunter2-abcdefg")
    said = explain(invalid.value)
    assert said.startswith("REWAKE_API_TOKENS: ") and "'ci'" in said
    assert "openssl rand -hex 24" in said
    assert "hunter2" not in said and "ops-secret" not in said
    assert parse_tokens("ci:" + "x" * 16) == {"ci": "x" * 16}


def test_serve_with_a_short_secret_exits_2_naming_the_variable(tmp_path: Path) -> None:
    """`rewake serve` with a short token secret stops before opening anything: exit 2, the
    variable and the token named, the secret not shown, no traceback."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["REWAKE_API_TOKENS"] = "admin:change-me"
    done = subprocess.run(
        [sys.executable, "-m", "rewake", "serve"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "REWAKE_API_TOKENS" in done.stderr and "'admin'" in done.stderr
    assert "change-me" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "rewake.db").exists()


def test_serve_without_the_postgres_extra_exits_2_with_the_fix(tmp_path: Path) -> None:
    """`rewake serve` on a PostgreSQL URL without the driver: one line naming the extra, exit 2,
    no traceback."""
    import os
    import subprocess
    import sys

    probe = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from rewake.cli import main\n"
        "sys.exit(main(['serve']))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["REWAKE_DATABASE_URL"] = "postgresql://u@127.0.0.1:1/db"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "pip install 'rewake[postgres]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["serve", "sweep"])
def test_a_url_whose_driver_is_missing_exits_2_in_one_line(tmp_path: Path, command: str) -> None:
    """A database URL naming a driver that is not installed (MySQL's here) stops `serve` and
    `sweep` with one line naming the driver, exit 2, no traceback, the password not shown."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["REWAKE_DATABASE_URL"] = "mysql://u:pw-not-shown@127.0.0.1:1/db"
    done = subprocess.run(
        [sys.executable, "-m", "rewake", command],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "pw-not-shown" not in done.stderr
    said = done.stderr.strip().splitlines()
    assert said[-1].startswith("REWAKE_DATABASE_URL names the mysql+mysqldb driver"), said


def test_configuration_errors_name_the_variable_and_hide_secrets() -> None:
    """An invalid setting is named as it was set (REWAKE_PORT, not `port`), with its value,
    except where the value may be a secret (tokens, URLs)."""
    from rewake.settings import explain

    with pytest.raises(ValidationError) as invalid:
        Settings(port=70000, api_tokens="ops-without-a-secret-hunter2")
    said = explain(invalid.value)
    assert "REWAKE_PORT: Input should be less than or equal to 65535 (got 70000)" in said
    assert "REWAKE_API_TOKENS must be name:secret pairs" in said
    assert "hunter2" not in said and "port" not in said.replace("REWAKE_PORT", "")


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
