"""`rewake cancel`, `rm`, `resolve` and `logs` on the local store, as a person types them; and
session names in the shell completion script."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewake.cli import main
from rewake.exits import Exit
from rewake.runner.store import records
from rewake.runner.store.stores import LocalStore, StoreError
from rewake.settings import Settings
from tests.support.db import migrate
from tests.support.reports import OBSERVED, QUOTA


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStore]:
    """A local database with session `s1` paused on a limit, auto-resume armed."""
    url = f"sqlite:///{tmp_path / 'rewake.db'}"
    migrate(url)
    monkeypatch.setenv("REWAKE_DATABASE_URL", url)
    monkeypatch.setenv("REWAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("REWAKE_URL", raising=False)
    local = LocalStore(Settings(database_url=url), migrate=False)
    body = {"attempt": 1, "message": QUOTA, "observed_at": OBSERVED, "zone": "Europe/Berlin"}
    local.report_failure("s1", "r1", body)
    local.set_auto_resume("s1", enabled=True)
    yield local
    local.close()


def test_cancel_clears_the_mark_and_rm_leaves_a_tombstone(
    store: LocalStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rm` of a paused session is refused (409: exit 3), `cancel` clears its armed mark, and
    then `rm` deletes it: the store answers 410 for it."""
    assert main(["rm", "s1"]) == Exit.REFUSED
    assert "session_active" in capsys.readouterr().err
    assert main(["cancel", "s1"]) == Exit.OK
    mark = store.get_mark("s1")
    assert (mark["state"], mark["clear_reason"]) == ("cleared", "cancel")
    assert main(["rm", "s1"]) == Exit.OK
    assert "deleted" in capsys.readouterr().out
    with pytest.raises(StoreError) as gone:
        store.get_session("s1")
    assert gone.value.code == "session_deleted"


def test_resolve_needs_an_uncertain_mark(
    store: LocalStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """`resolve` of a session whose mark is armed, not uncertain: 409 mark_not_uncertain, exit 3."""
    assert main(["resolve", "s1", "done"]) == Exit.REFUSED
    assert "mark_not_uncertain" in capsys.readouterr().err
    assert store.get_mark("s1")["state"] == "armed"


def test_logs_prints_the_latest_attempts_log_or_its_path(
    store: LocalStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """`logs NAME` prints the latest attempt's log, `--attempt N` another, `--path` the path;
    a session with no log is exit 4 with where it looked."""
    for attempt in (1, 2):
        path = records.log_path("s1", "r1", attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"attempt {attempt} said: Missing environment variable: KEY_{attempt}\n")
    assert main(["logs", "s1"]) == Exit.OK
    assert capsys.readouterr().out == "attempt 2 said: Missing environment variable: KEY_2\n"
    assert main(["logs", "s1", "--attempt", "1"]) == Exit.OK
    assert "KEY_1" in capsys.readouterr().out
    assert main(["logs", "s1", "--path"]) == Exit.OK
    assert capsys.readouterr().out.strip() == str(records.log_path("s1", "r1", 2))
    assert main(["logs", "other"]) == Exit.NOT_FOUND
    assert "no log of other" in capsys.readouterr().err


def test_the_completion_script_completes_session_names(tmp_path: Path) -> None:
    """bash completes `rewake show <TAB>` (and cancel, rm, logs, run --resume) with the names
    of the run records in the state dir."""
    script = subprocess.run(
        [sys.executable, "-m", "rewake", "--print-completion", "bash"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for command in ("show", "cancel", "rm", "resolve", "logs", "auto_resume"):
        assert f"_shtab_rewake_{command}_pos_0_COMPGEN=_rewake_sessions" in script
    assert "_shtab_rewake_run___resume_COMPGEN=_rewake_sessions" in script
    assert "_shtab_rewake_run___name_COMPGEN" not in script
    runs = tmp_path / "state" / "runs"
    runs.mkdir(parents=True)
    for name in ("fix-tests", "fix-docs", "other"):
        (runs / f"{name}.json").write_text("{}")
    env = {"SCRIPT": script, "PATH": "/usr/bin:/bin", "REWAKE_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        ["bash", "-c", 'eval "$SCRIPT" && _rewake_sessions fix'], env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert sorted(done.stdout.split()) == ["fix-docs", "fix-tests"], done.stderr


def test_ls_watch_redraws_the_list_in_place_on_a_terminal(
    store: LocalStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ls --watch` on a terminal draws the list, then moves the cursor back up and draws it
    again (in place, not appended); piped, it refuses with exit 2."""
    import argparse
    import io

    from rich.console import Console

    from rewake.runner.commands.status import watch_ls

    args = argparse.Namespace(watch=2.0, limit=50, state=None, provider=None)
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, highlight=False)
    slept: list[float] = []
    assert watch_ls(args, console=console, sleep=slept.append, turns=2) == Exit.OK
    drawn = screen.getvalue()
    # Two reads, each drawn over the last (rich erases the lines it drew: ESC[2K), and the
    # last one left on screen when the watch ends.
    assert drawn.count("s1") == 3 and slept == [2.0]
    assert drawn.count("\x1b[2K") >= 2
    piped = Console(file=io.StringIO(), force_terminal=False)
    assert watch_ls(args, console=piped, turns=1) == Exit.USAGE
    assert "--watch needs a terminal" in capsys.readouterr().err


def test_show_names_the_failed_attempts_full_log(
    store: LocalStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a failure's tail of CLI text, `show` names the whole log and `rewake logs`, when
    the log is in this machine's state dir; without it, no such line."""
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["show", "s1"]) == Exit.OK
    assert "full log:" not in capsys.readouterr().out
    path = records.log_path("s1", "r1", 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("the whole output\n")
    assert main(["show", "s1"]) == Exit.OK
    assert f"  full log: {path} (rewake logs s1)" in capsys.readouterr().out
