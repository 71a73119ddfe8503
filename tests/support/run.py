"""Helpers for `rewake run`'s end-to-end tests: the stand-in CLIs on PATH, a scenario file, a
state directory and a SQLite file in tmp_path, and readers for what happened."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rewake import heartbeats
from rewake.db.engine import Database
from tests.support.db import migrate
from tests.support.sweeper import REPO, rewake_env, start_sweeper, stop_all, wait_until

STANDINS = REPO / "tests" / "standins"


def _default_sigint() -> None:
    """In a child before it runs: SIGINT at its default, whatever this process inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass
class RunEnv:
    """One test's world: where rewake and the stand-ins keep their state."""

    tmp: Path
    env: dict[str, str]
    work: Path
    #: The `rewake` processes `start` started, ended by `end_started` (the fixture does).
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return self.env["REWAKE_DATABASE_URL"]

    def scenario(self, *outcomes: dict[str, Any]) -> None:
        """What the stand-ins do on each invocation, in order (the last one repeats)."""
        path = self.tmp / "scenario.json"
        path.write_text(json.dumps({"outcomes": list(outcomes)}))
        for extra in (".n", ".lock"):
            Path(str(path) + extra).unlink(missing_ok=True)

    def invocations(self) -> list[dict[str, Any]]:
        """Every stand-in invocation so far (`--version` calls left out)."""
        path = self.tmp / "invocations.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def rewake(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`rewake ARGS` run to its end in the work directory."""
        return subprocess.run(
            [sys.executable, "-m", "rewake", *args], cwd=self.work, env=self.env,
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def start(self, *args: str) -> subprocess.Popen[str]:
        """`rewake ARGS` started in the work directory, its output in a pipe, with Ctrl-C
        (SIGINT) doing what it does from a terminal: pytest started in the background by a
        script (`cmd &`, job control off) ignores SIGINT, the child inherits that, and a
        test's SIGINT to `rewake run` then did nothing."""
        process = subprocess.Popen(
            [sys.executable, "-m", "rewake", *args], cwd=self.work, env=self.env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            preexec_fn=_default_sigint,
        )  # fmt: skip
        self.started.append(process)
        return process

    def end_started(self) -> None:
        """End what `start` started and close its pipe, however the test ended. A test that
        failed midway (a `communicate` timing out on a busy machine) left `rewake run`
        running, and its pipe to the garbage collector, whose ResourceWarning
        filterwarnings=error then failed whichever test ran next in the process. SIGTERM
        first: rewake stops the CLI it supervises on it (SIGKILL would leave the CLI)."""
        while self.started:
            process = self.started.pop()
            if process.poll() is None:
                process.terminate()
            try:
                process.communicate(timeout=20)  # drains and closes its pipe, reaps it
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()

    def record(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.tmp / "state" / "runs" / f"{name}.json").read_text()
        )
        return data

    def log(self, name: str, attempt: int) -> Path:
        return self.tmp / "state" / "logs" / name / f"r1-attempt-{attempt}.log"

    def session(self, name: str) -> dict[str, Any]:
        """The session as the API shows it, read through the local store."""
        from rewake.runner.store.stores import LocalStore
        from rewake.settings import Settings

        store = LocalStore(Settings(database_url=self.database_url), migrate=False)
        try:
            return store.get_session(name)
        finally:
            store.close()


def process_running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


#: Every RunEnv made in this process whose started processes the test has not seen ended:
#: `end_all_started` (tests/e2e/conftest.py, after each test) ends them.
_MADE: list[RunEnv] = []


def end_all_started() -> None:
    """End what every RunEnv made so far started (`RunEnv.end_started`)."""
    while _MADE:
        _MADE.pop().end_started()


def make_run_env(tmp_path: Path, **settings: object) -> RunEnv:
    """A RunEnv in `tmp_path`; what it starts ends with the test (`end_all_started`)."""
    work = tmp_path / "work"
    work.mkdir()
    env = rewake_env(f"sqlite:///{tmp_path / 'rewake.db'}", resume_delay_s=0, **settings)
    env.update(
        PATH=os.pathsep.join([str(STANDINS), env.get("PATH", "")]),
        REWAKE_STATE_DIR=str(tmp_path / "state"),
        STANDIN_STATE=str(tmp_path / "standin-state"),
        STANDIN_LOG=str(tmp_path / "invocations.jsonl"),
        STANDIN_SCENARIO=str(tmp_path / "scenario.json"),
        STANDIN_PIDFILE=str(tmp_path / "standin.pid"),
        TZ="UTC",
        PYTHONUNBUFFERED="1",
        # A CLI started for an automatic resume sees only an allowlist (rewake.spawn_env): the
        # stand-ins' own settings are added to it as an operator would add a CLI's.
        REWAKE_PASS_ENV="STANDIN_*,PYTHONUNBUFFERED",
    )
    run_env = RunEnv(tmp_path, env, work)
    _MADE.append(run_env)
    return run_env


@pytest.fixture
def run_env(tmp_path: Path) -> RunEnv:
    """Stand-in CLIs on PATH, rewake's state and database in tmp_path, no resume delay; what
    the test started ends with it (tests/e2e/conftest.py)."""
    return make_run_env(tmp_path)


def epoch_in(seconds: float) -> int:
    """An epoch (whole seconds, as Claude's resetsAt) at least `seconds` from now."""
    return int(time.time() + seconds) + 1


def attempts_of(session: dict[str, Any]) -> list[dict[str, Any]]:
    return [attempt for run in session["runs"] for attempt in run["attempts"]]


def first_event_session_id(log: Path) -> str | None:
    """The session id the CLI reported first in an attempt's raw log."""
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("session_id"):
                return str(event["session_id"])
    return None


@contextmanager
def sweeper_running(run_env: RunEnv, tmp_path: Path) -> Iterator[None]:
    """A real `rewake sweep` on the run's database, its first heartbeat seen."""
    migrate(run_env.database_url)
    sweeper = start_sweeper(run_env.env, tmp_path / "sweeper.log")
    database = Database(run_env.database_url)
    try:

        def heartbeat_seen() -> bool:
            with database.reader() as db:
                return heartbeats.latest_heartbeat(db) is not None

        assert wait_until(heartbeat_seen, 30), (tmp_path / "sweeper.log").read_text()
        yield
    finally:
        stop_all([sweeper])
        database.dispose()
