"""`rewake setup`'s unit, run as systemd would run it: its ExecStart and Environment read back
from the file, the sweeper started from them beside a `rewake run` that hit a limit, and
`rewake auto-resume NAME on` fired once by that sweeper. The stand-in CLIs play Claude."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewake.db.engine import Database
from rewake.exits import Exit
from rewake.runner.setup.sweeper_service import UNIT_NAME
from rewake.runner.store.stores import LocalStore
from rewake.settings import Settings
from tests.support import systemd_syntax
from tests.support.run import STANDINS, attempts_of, epoch_in
from tests.support.sweeper import heartbeat_seen, stop_all, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="writes a systemd unit"),
]


def test_the_written_unit_starts_a_sweeper_that_resumes_once(tmp_path: Path) -> None:
    """No user bus: setup writes the unit and exits 1. The sweeper started from the unit's own
    ExecStart and Environment (plus HOME, the stand-ins' settings and a 1 s tick, so the test
    is short) watches the database `rewake run` and `rewake auto-resume` use by default, and
    fires the armed resume through the unit's REWAKE_COMMAND exactly once."""
    if not (Path(sys.executable).parent / "rewake").exists():
        pytest.skip("needs the rewake console script beside the interpreter (pip install -e .)")
    home, runtime, work = tmp_path / "home", tmp_path / "runtime", tmp_path / "work"
    for folder in (home, runtime, work):
        folder.mkdir(mode=0o700)
    standin = {
        "STANDIN_STATE": str(tmp_path / "standin-state"),
        "STANDIN_LOG": str(tmp_path / "invocations.jsonl"),
        "STANDIN_SCENARIO": str(tmp_path / "scenario.json"),
        "STANDIN_PIDFILE": str(tmp_path / "standin.pid"),
    }
    user = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(STANDINS), str(Path(sys.executable).parent), "/usr/bin:/bin"]),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        # An empty runtime folder and no DBUS_SESSION_BUS_ADDRESS: no user manager answers,
        # so no test ever reaches the real one of whoever runs it.
        "XDG_RUNTIME_DIR": str(runtime),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONUNBUFFERED": "1",
        "REWAKE_RESUME_DELAY_S": "0",
        **standin,
    }

    def rewake(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rewake", *args], cwd=work, env=user,
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    done = rewake("setup")
    assert done.returncode == Exit.PROBLEM, done.stdout + done.stderr
    assert "cannot be reached" in done.stdout
    unit = (tmp_path / "config" / "systemd" / "user" / UNIT_NAME).read_text()
    argv = systemd_syntax.exec_start(unit)
    environment = systemd_syntax.environment(unit)
    state = tmp_path / "xdg-state" / "rewake"
    assert argv == [str(Path(sys.executable).parent / "rewake"), "sweep"]
    assert environment["REWAKE_DATABASE_URL"] == f"sqlite:///{state / 'rewake.db'}"

    Path(standin["STANDIN_SCENARIO"]).write_text(
        json.dumps({"outcomes": [{"do": "limit", "resets_at": epoch_in(6)}, {"do": "success"}]})
    )
    done = rewake("run", "--name", "su1", "--", "claude", "-p", "go")
    assert "rewake auto-resume su1 on" in done.stdout, done.stdout + done.stderr

    log = tmp_path / "sweeper.log"
    sweeper_env = {
        "HOME": str(home), "LANG": "C.UTF-8", **environment, **standin,
        "REWAKE_PASS_ENV": "STANDIN_*", "REWAKE_SWEEP_INTERVAL_S": "1",
    }  # fmt: skip
    with log.open("ab") as out:
        sweeper = subprocess.Popen(argv, env=sweeper_env, cwd=home, stdout=out, stderr=out)
    database = Database(environment["REWAKE_DATABASE_URL"])
    try:
        assert wait_until(lambda: heartbeat_seen(database), 30), log.read_text()
        done = rewake("auto-resume", "su1", "on")
        assert done.returncode == Exit.OK, done.stdout + done.stderr

        def session() -> dict[str, object]:
            store = LocalStore(Settings(database_url=environment["REWAKE_DATABASE_URL"]))
            try:
                return store.get_session("su1")
            finally:
                store.close()

        def resumed() -> bool:
            return [a["status"] for a in attempts_of(session())] == ["failed", "completed"]

        assert wait_until(resumed, 40), log.read_text()
        time.sleep(3)  # three more ticks: a second firing would show now
    finally:
        stop_all([sweeper])
        database.dispose()
    calls = [json.loads(line) for line in Path(standin["STANDIN_LOG"]).read_text().splitlines()]
    assert len(calls) == 2, calls
    assert calls[1]["argv"][:2] == ["-p", "--resume"] and calls[1]["cwd"] == str(work)
    mark = session()["mark"]
    assert isinstance(mark, dict) and mark["state"] == "done", mark
