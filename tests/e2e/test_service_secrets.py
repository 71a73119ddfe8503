"""Nothing rewake starts can read its secrets: a live `rewake serve` (or `rewake sweep`) with
the command executor runs a program that reads its parent's /proc environ and cmdline and its
own environment, for secrets given in the environment and in files (rewake.secret_env)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.support.slowdown import Wait
from tests.support.sweeper import REPO, free_port

TOKEN = "live-token-secret-" + uuid.uuid4().hex
OTHER_TOKEN = "other-token-secret-" + uuid.uuid4().hex
WEBHOOK_SECRET = "whsec-live-secret-" + uuid.uuid4().hex
DB_PASSWORD = "dbpw" + uuid.uuid4().hex
#: The program the command executor runs: what a resumed agent could read, written out.
PEEK = """
import json, os, sys
parent = os.getppid()
seen = {
    "parent_environ": open(f"/proc/{parent}/environ", "rb").read().decode("utf-8", "replace"),
    "parent_cmdline": open(f"/proc/{parent}/cmdline", "rb").read().decode("utf-8", "replace"),
    "own_environ": dict(os.environ),
    "argv": sys.argv,
}
with open(sys.argv[1] + ".part", "w") as out:
    json.dump(seen, out)
os.rename(sys.argv[1] + ".part", sys.argv[1])
"""


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """PostgreSQL with a password in the URL when the tests have it (trust auth takes any
    password, so the URL works); else a SQLite file, whose URL holds no secret."""
    if not os.environ.get("REWAKE_TEST_POSTGRES_URL"):
        yield f"sqlite:///{tmp_path / 'rewake.db'}"
        return
    from tests.support.db import fresh_postgres_schema

    with fresh_postgres_schema(migrated=False) as url:
        yield url.replace("postgres@", f"postgres:{DB_PASSWORD}@", 1)


def _environment(tmp_path: Path, secrets: dict[str, str], how: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    peek = tmp_path / "peek.py"
    peek.write_text(PEEK)
    env.update(
        REWAKE_EXECUTOR="command",
        REWAKE_COMMAND=json.dumps([sys.executable, str(peek), str(tmp_path / "seen.json")]),
        REWAKE_SWEEP_INTERVAL_S="0.2",
        REWAKE_RESUME_DELAY_S="0",
        REWAKE_ACCOUNT_STAGGER_S="0",
    )
    for name, value in secrets.items():
        if how == "env":
            env[name] = value
        else:
            path = tmp_path / name.lower()
            path.write_text(value + "\n")
            env[name + "_FILE"] = str(path)
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "rewake", *args],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(log.parent),
        )  # fmt: skip


def _wait(what: str, condition: object, procs: list[subprocess.Popen[bytes]], log: Path) -> None:
    wait = Wait(40)
    while not wait.over():
        if callable(condition) and condition():
            return
        for proc in procs:
            assert proc.poll() is None, f"rewake exited: {log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"{what} never happened: {log.read_text()}")


@pytest.mark.parametrize(
    ("how", "sidecar"), [("env", False), ("files", False), ("env", True)],
    ids=["serve-env", "serve-files", "sweep-sidecar-env"],
)  # fmt: skip
def test_the_program_rewake_starts_reads_none_of_its_secrets(
    tmp_path: Path, database_url: str, how: str, sidecar: bool
) -> None:
    """A resumed program finds no token secret, webhook key or database password in its
    environment nor in its parent's /proc/PPID/environ and /proc/PPID/cmdline."""
    secrets = {
        "REWAKE_API_TOKENS": f"live:{TOKEN},other:{OTHER_TOKEN}",
        "REWAKE_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "REWAKE_DATABASE_URL": database_url,
    }
    env = _environment(tmp_path, secrets, how)
    log = tmp_path / "rewake.log"
    port = free_port()
    serve = ["serve", "--port", str(port)] + (["--no-sweeper"] if sidecar else [])
    procs = [_start(serve, env, log)]
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=10) as client:
            client.headers["Authorization"] = f"Bearer {TOKEN}"

            def ready() -> bool:
                try:
                    return client.get("/healthz").status_code == 200
                except httpx.TransportError:
                    return False

            _wait("serve ready", ready, procs, log)
            # The tokens were read (from the environment or the file): a caller needs one.
            assert httpx.get(f"{base}/readyz", timeout=10).status_code == 401
            if sidecar:
                procs.append(_start(["sweep"], env, log))
            body = {
                "attempt": 1,
                "message": "You've hit your usage limit. Try again in 1 second.",
                "observed_at": datetime.now(UTC).isoformat(),
            }
            root = "secrets-" + uuid.uuid4().hex[:8]
            answer = client.post(f"/api/agent/runs/{root}/runs/r1/failures", json=body)
            assert answer.status_code == 201, answer.text
            mark = client.put(f"/api/agent/runs/{root}/auto-resume", json={"enabled": True})
            assert mark.status_code == 200, mark.text
        seen_path = tmp_path / "seen.json"
        _wait("the resume", seen_path.exists, procs, log)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=15)
    seen = json.loads(seen_path.read_text())
    text = json.dumps(seen)
    assert "rewake" in seen["parent_cmdline"], "the parent is not rewake"
    for secret in (TOKEN, OTHER_TOKEN, WEBHOOK_SECRET, DB_PASSWORD):
        assert secret not in text, f"{secret[:12]}... readable by the program"
