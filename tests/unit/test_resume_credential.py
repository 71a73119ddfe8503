"""The one-resume credential the command executor hands `rewake run --resume-of`: it verifies
only under the service's own key, acts only on its session's report routes, and replaces the
sweeper's store settings in the program's environment (never its token secrets)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rewake.errors import DomainError
from rewake.executors.base import Delivery
from rewake.executors.command import CommandExecutor, MarkStore
from rewake.security import resume_credential
from rewake.security.auth import authenticate
from rewake.settings import Settings

OPS = "ops-secret-0123456789"
T = datetime(2026, 11, 30, 16, 41, 30, tzinfo=UTC)


def delivery(root_id: str = "demo", run_id: str = "r1", mark_id: int = 42) -> Delivery:
    return Delivery(
        mark_id=mark_id, root_id=root_id, run_id=run_id, attempt=1, attempt_key="k5f0c-42",
        reset_at=T, resolution_s=60, due_at=T, armed_by="alice", armed_at=T, sent_at=T,
    )  # fmt: skip


def settings(tokens: str = f"ops:{OPS}") -> Settings:
    return Settings(api_tokens=tokens, database_url="sqlite://")


def credential(config: Settings, **ids: object) -> str:
    key = resume_credential.credential_key(config.tokens.values())
    assert key is not None
    wanted = {"root_id": "demo", "run_id": "r1", "mark_id": 42, "attempt_key": "k5f0c-42", **ids}
    return resume_credential.mint(key, **wanted)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "route",
    [
        ("GET", "/api/agent/runs/demo"),
        ("GET", "/api/agent/runs/demo/auto-resume"),
        ("PUT", "/api/agent/runs/demo/auto-resume"),
        ("POST", "/api/agent/runs/demo/runs/r1/attempts"),
        ("POST", "/api/agent/runs/demo/runs/r1/failures"),
    ],
)
def test_the_credential_acts_on_its_sessions_report_routes(route: tuple[str, str]) -> None:
    """On its own session's report routes the credential acts, as resume-<mark id>."""
    config = settings()
    assert authenticate(config, "127.0.0.1", f"Bearer {credential(config)}", route=route) == (
        "resume-42"
    )


@pytest.mark.parametrize(
    "route",
    [
        ("GET", "/api/agent/runs"),
        ("GET", "/api/agent/runs/other"),
        ("POST", "/api/agent/runs/other/runs/r1/attempts"),
        ("POST", "/api/agent/runs/demo/runs/r2/attempts"),
        ("POST", "/api/agent/runs/demo/cancel"),
        ("DELETE", "/api/agent/runs/demo"),
        ("POST", "/api/agent/runs/demo/auto-resume/resolve"),
        ("GET", "/metrics"),
    ],
)
def test_the_credential_acts_nowhere_else(route: tuple[str, str]) -> None:
    """Another session, another run, the list, cancel, delete, resolve: 401 unauthorized."""
    config = settings()
    with pytest.raises(DomainError) as refused:
        authenticate(config, "127.0.0.1", f"Bearer {credential(config)}", route=route)
    assert refused.value.code == "unauthorized"


def test_a_credential_of_another_key_or_altered_is_refused() -> None:
    """Minted under other tokens, or with an id changed after signing: refused."""
    route = ("GET", "/api/agent/runs/demo")
    elsewhere = credential(settings(f"ops:{'x' * 24}"))
    genuine = credential(settings())
    head, _, signature = genuine.rpartition(".")
    fields = head.split(".")
    fields[3] = "43"
    altered = ".".join(fields) + "." + signature
    for presented in (elsewhere, altered, genuine[:-2], "rwr1.", "rwr1.a.b.c.d.e.f"):
        with pytest.raises(DomainError):
            authenticate(settings(), "127.0.0.1", f"Bearer {presented}", route=route)


def test_the_sign_in_form_never_takes_the_credential() -> None:
    """Without a route (the page's sign-in form), the credential is no token at all."""
    config = settings()
    with pytest.raises(DomainError):
        authenticate(config, "127.0.0.1", f"Bearer {credential(config)}")


def test_the_program_gets_the_marks_service_and_a_credential_not_the_secrets() -> None:
    """The command executor's program gets the service's URL and a credential for its own
    resume, instead of the sweeper's REWAKE_URL, REWAKE_TOKEN and database URL."""
    config = settings()
    key = resume_credential.credential_key(config.tokens.values())
    sweeper_env = {
        "PATH": "/usr/bin", "REWAKE_API_TOKENS": f"ops:{OPS}", "REWAKE_URL": "http://elsewhere",
        "REWAKE_TOKEN": "ops:" + OPS, "REWAKE_DATABASE_URL": "sqlite:////tmp/other.db",
    }  # fmt: skip
    store = MarkStore(service_url="http://127.0.0.1:8600", credential_key=key)
    env = CommandExecutor(["rewake"], env=sweeper_env, store=store).environment(delivery())
    assert env["REWAKE_URL"] == "http://127.0.0.1:8600"
    assert "REWAKE_DATABASE_URL" not in env and OPS not in str(env)
    scope = resume_credential.verify(key, env["REWAKE_TOKEN"])
    assert scope == resume_credential.ResumeScope("demo", "r1", 42, "k5f0c-42")


def test_a_sweeper_on_a_database_hands_its_own_database() -> None:
    """A `rewake sweep` hands its database, whatever REWAKE_URL its environment holds."""
    sweeper_env = {"REWAKE_URL": "http://elsewhere", "REWAKE_TOKEN": "t"}
    store = MarkStore(database_url="sqlite:////srv/rewake.db")
    env = CommandExecutor(["rewake"], env=sweeper_env, store=store).environment(delivery())
    assert env["REWAKE_DATABASE_URL"] == "sqlite:////srv/rewake.db"
    assert "REWAKE_URL" not in env and "REWAKE_TOKEN" not in env


def test_a_sweeper_on_postgresql_hands_its_database_without_the_password() -> None:
    """The database a `rewake sweep` hands its program carries no password: the program runs
    where the agent does, so it brings its own credential (~/.pgpass)."""
    store = MarkStore(database_url="postgresql+psycopg://rewake:s3cret-pw@db:5432/rewake")
    env = CommandExecutor(["rewake"], env={}, store=store).environment(delivery())
    assert env["REWAKE_DATABASE_URL"] == "postgresql+psycopg://rewake@db:5432/rewake"
    assert "s3cret-pw" not in str(env)


def test_a_relative_sqlite_database_is_handed_on_absolute() -> None:
    """`rewake sweep` on the default `sqlite:///rewake.db` hands the file where it runs."""
    from pathlib import Path

    from rewake.main import database_store

    store = database_store(Settings(database_url="sqlite:///rewake.db"), cwd=Path("/srv/x"))
    assert store.database_url == "sqlite:////srv/x/rewake.db"
    kept = database_store(Settings(database_url="sqlite:////abs/r.db"), cwd=Path("/srv/x"))
    assert kept.database_url == "sqlite:////abs/r.db"
