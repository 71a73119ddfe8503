"""`rewake serve` and `rewake migrate` as a user runs them: real processes, real HTTP."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory

from rewake.db import migrations
from tests.support.serve import rewake, wait_healthy
from tests.support.slowdown import Wait
from tests.support.sweeper import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`rewake serve` with no configuration at all, in an empty directory."""
    port = free_port()
    process = rewake("serve", "--port", str(port), cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_runs_on_embedded_sqlite_with_no_configuration(
    served: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    """With nothing configured, serve migrates rewake.db here, takes reports and gets ready."""
    url, process = served
    body = {
        "attempt": 1,
        "message": "You've hit your session limit · resets 5:40pm (Europe/Berlin)",
        "observed_at": "2026-11-30T14:05:00+01:00",
        "zone": "Europe/Berlin",
    }
    answer = httpx.post(f"{url}/api/agent/runs/demo/runs/r1/failures", json=body)
    assert answer.status_code == 201
    assert answer.json()["verdict"]["reset_at"] == "2026-11-30T16:40:00Z"
    assert (tmp_path / "rewake.db").exists()
    wait = Wait(15)
    while httpx.get(f"{url}/readyz").status_code != 200:  # its own sweeper's heartbeat
        assert not wait.over(), httpx.get(f"{url}/readyz").text
        time.sleep(0.2)
    process.terminate()
    _, log = process.communicate(timeout=10)
    assert "any local process (agents included) can use it" in log
    head = ScriptDirectory.from_config(migrations.alembic_config()).get_current_head()
    assert f"schema_current revision={head}" in log


def test_serve_refuses_a_public_address_without_tokens(tmp_path: Path) -> None:
    """Binding a non-loopback address with no REWAKE_API_TOKENS is refused at start."""
    process = rewake("serve", "--host", "0.0.0.0", "--port", str(free_port()), cwd=tmp_path)
    _, log = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "bind_refused" in log
    assert not (tmp_path / "rewake.db").exists()


def test_no_migrate_refuses_a_schema_that_is_not_current(tmp_path: Path) -> None:
    """serve --no-migrate on an empty database refuses to start and names `rewake migrate`."""
    process = rewake("serve", "--no-migrate", "--port", str(free_port()), cwd=tmp_path)
    _, log = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "run `rewake migrate`" in log


def test_migrate_then_a_newer_schema_is_refused(tmp_path: Path) -> None:
    """`rewake migrate` makes the schema; a revision it does not know makes serve refuse."""
    migrate = rewake("migrate", cwd=tmp_path)
    _, log = migrate.communicate(timeout=30)
    assert migrate.returncode == 0, log
    with sqlite3.connect(tmp_path / "rewake.db") as connection:
        connection.execute("UPDATE alembic_version SET version_num = 'f00dcafe'")
    serve = rewake("serve", "--port", str(free_port()), cwd=tmp_path)
    _, log = serve.communicate(timeout=30)
    assert serve.returncode == 2
    assert "newer than this rewake knows" in log


def test_json_logs_when_asked(tmp_path: Path) -> None:
    """REWAKE_LOG_JSON=1 makes every log line a JSON object with an event name."""
    migrate = rewake("migrate", cwd=tmp_path, env={"REWAKE_LOG_JSON": "1"})
    _, log = migrate.communicate(timeout=30)
    events = [json.loads(line)["event"] for line in log.splitlines() if line.startswith("{")]
    assert "schema_current" in events


#: A `rewake serve` whose SQLite busy timeout is half a second, so that a locked database is
#: found locked within the test's time (the real one waits 30 s for the lock first).
SHORT_BUSY_SERVE = (
    "import sys, rewake.db.engine as engine; engine.SQLITE_BUSY_TIMEOUT_MS = 500; "
    "from rewake.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _without_root_privilege() -> list[str]:
    """A prefix that makes root obey file permissions (it bypasses them otherwise)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only directory is writable")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize("case", ["read_only_directory", "locked", "no_directory", "not_sqlite"])
def test_serve_refuses_an_unusable_database_in_one_line(tmp_path: Path, case: str) -> None:
    """A SQLite file serve cannot use (a read-only directory, a file another process holds
    exclusively, a missing directory, a file that is no database) is one error line naming
    the database and the reason, and exit status 2: no traceback."""
    database = tmp_path / "rewake.db"
    holder = None
    prefix: list[str] = []
    if case == "read_only_directory":
        database = tmp_path / "read-only" / "rewake.db"
        database.parent.mkdir(mode=0o555)
        prefix = _without_root_privilege()
    elif case == "locked":
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
    elif case == "no_directory":
        database = tmp_path / "missing" / "rewake.db"
    else:
        database.write_text("not a database\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("REWAKE_")}
    env |= {"PYTHONPATH": str(ROOT), "REWAKE_DATABASE_URL": f"sqlite:///{database}"}
    try:
        serve = subprocess.run(
            [*prefix, sys.executable, "-c", SHORT_BUSY_SERVE, "serve", "--port", str(free_port())],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        if holder is not None:
            holder.close()
    assert serve.returncode == 2, serve.stderr
    assert "Traceback" not in serve.stderr
    [line] = [line for line in serve.stderr.splitlines() if "database_unusable" in line]
    assert str(database) in line and "reason=" in line
