"""Secrets from files and out of the environment (rewake.secret_env): each refusal has its code,
and re-execution hands the values over without them in the new environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from rewake import secret_env
from rewake.secret_env import SecretError, read_secret_files, seal_environment
from rewake.settings import Settings
from rewake.spawn_env import command_environment, without_password


def _code(environ: Mapping[str, str]) -> str:
    with pytest.raises(SecretError) as raised:
        read_secret_files(environ)
    assert raised.value.code in str(raised.value)
    return raised.value.code


def test_a_secret_file_is_read_without_its_final_newline(tmp_path: Path) -> None:
    """REWAKE_WEBHOOK_SECRET_FILE gives the file's text, the editor's newline left out."""
    (tmp_path / "key").write_text("whsec-from-a-file\n")
    got = read_secret_files({"REWAKE_WEBHOOK_SECRET_FILE": str(tmp_path / "key")})
    assert got == {"REWAKE_WEBHOOK_SECRET": "whsec-from-a-file"}


def test_missing_empty_and_fifo_files_are_refused_with_stable_codes(tmp_path: Path) -> None:
    """A missing file and a FIFO are secret_file_unreadable (the FIFO never blocks); an empty
    one is secret_file_empty."""
    assert _code({"REWAKE_API_TOKENS_FILE": str(tmp_path / "absent")}) == "secret_file_unreadable"
    (tmp_path / "empty").write_text(" \n")
    assert _code({"REWAKE_API_TOKENS_FILE": str(tmp_path / "empty")}) == "secret_file_empty"
    os.mkfifo(tmp_path / "fifo")
    assert _code({"REWAKE_DATABASE_URL_FILE": str(tmp_path / "fifo")}) == "secret_file_unreadable"


def test_a_secret_set_both_ways_is_a_conflict(tmp_path: Path) -> None:
    """REWAKE_DATABASE_URL and REWAKE_DATABASE_URL_FILE together are refused, not ranked."""
    (tmp_path / "url").write_text("sqlite:///x.db")
    environ = {"REWAKE_DATABASE_URL": "sqlite:///y.db", "REWAKE_DATABASE_URL_FILE": str(tmp_path)}
    assert _code(environ) == "secret_conflict"


def test_settings_take_the_tokens_from_their_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings() reads REWAKE_API_TOKENS_FILE as it would REWAKE_API_TOKENS."""
    (tmp_path / "tokens").write_text("ops:0123456789abcdef0123\n")
    monkeypatch.delenv("REWAKE_API_TOKENS", raising=False)
    monkeypatch.setenv("REWAKE_API_TOKENS_FILE", str(tmp_path / "tokens"))
    assert Settings().tokens == {"ops": "0123456789abcdef0123"}


def test_sealing_reexecutes_without_the_secrets_and_hands_them_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The re-executed environment holds no secret, only the descriptor that carries them; the
    new image reads them from it."""
    monkeypatch.setattr(secret_env, "_handed", {})
    calls: list[tuple[str, list[str], dict[str, str]]] = []
    environ = {"PATH": "/bin", "REWAKE_API_TOKENS": "a:0123456789abcdef", "REWAKE_PORT": "1"}
    seal_environment(
        environ, argv=["rewake", "serve"], executable="/py", execve=lambda *a: calls.append(a)
    )
    ((executable, argv, new_env),) = calls
    assert (executable, list(argv)) == ("/py", ["rewake", "serve"])
    assert set(new_env) == {"PATH", "REWAKE_PORT", secret_env.HANDOVER_VAR}
    seal_environment(dict(new_env))  # as the new image does
    assert secret_env.handed_over() == {"REWAKE_API_TOKENS": "a:0123456789abcdef"}
    with pytest.raises(OSError):
        os.fstat(int(new_env[secret_env.HANDOVER_VAR]))  # read once, then closed


def test_the_program_gets_the_database_url_without_its_password() -> None:
    """The command executor's program gets REWAKE_DATABASE_URL with no password in it, and
    neither a secret, nor where its file is, nor the handover's descriptor."""
    url = "postgresql+psycopg://rewake:s3cret-pw@db:5432/rewake?sslmode=require"
    env = command_environment(
        {
            "REWAKE_DATABASE_URL": url,
            "REWAKE_API_TOKENS": "a:b",
            "REWAKE_API_TOKENS_FILE": "/run/credentials/api_tokens",
            secret_env.HANDOVER_VAR: "3",
        }
    )
    assert env == {
        "REWAKE_DATABASE_URL": "postgresql+psycopg://rewake@db:5432/rewake?sslmode=require"
    }
    assert without_password("sqlite:///rewake.db") == "sqlite:///rewake.db"


@pytest.mark.parametrize("command", ["serve", "sweep", "migrate"])
def test_a_bad_secret_file_stops_the_service_in_one_line(tmp_path: Path, command: str) -> None:
    """`rewake serve`, `sweep` and `migrate` with an unreadable REWAKE_API_TOKENS_FILE exit 2
    with one line naming the variable and the code, no traceback, nothing opened."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["REWAKE_API_TOKENS_FILE"] = str(tmp_path / "absent")
    done = subprocess.run(
        [sys.executable, "-m", "rewake", command],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"rewake: invalid configuration: REWAKE_API_TOKENS_FILE: cannot read {tmp_path}/absent: "
        "No such file or directory (secret_file_unreadable)"
    ]
    assert not (tmp_path / "rewake.db").exists()
