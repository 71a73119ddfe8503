"""Each command's start-up as a budget: what it imports before it knows it has work.

Claude Code waits for `rewake hook claude` on every prompt typed, most of them in sessions rewake
never reported; `--version`, `--help` and `ls` on a machine where nothing was recorded have no
store to open. A module that joins one of these import sets (SQLAlchemy through a store opened
too early, rich, httpx) fails here, naming it. bench/startup_bench.py measures the time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewake import cli

#: Run in a fresh interpreter: `rewake` with ARGV and STDIN, then the modules it imported.
PROBE = """
import io, json, sys
argv, stdin = json.loads(sys.argv[1]), sys.argv[2]
before = set(sys.modules)
sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
sys.stdout = io.StringIO()
from rewake.cli import main
try:
    status = main(argv)
except SystemExit as done:
    status = done.code
print(json.dumps({"status": status, "modules": sorted(set(sys.modules) - before)}),
      file=sys.__stdout__)
"""

#: Packages none of these commands may load: the service, its database, the terminal views.
HEAVY = (
    "alembic", "anyio", "apprise", "dateparser", "fastapi", "httpx", "prometheus_client",
    "pydantic", "rich", "shtab", "sqlalchemy", "sqlmodel", "starlette", "uvicorn",
)  # fmt: skip

#: A prompt typed in a session the hook never reported.
UNREPORTED_PROMPT = json.dumps(
    {
        "session_id": "4f1c2d3e-0000-4000-8000-000000000001",
        "transcript_path": "/nonexistent/x.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "go on",
    }
)

#: Claude Code's report that its own auto-continue went stale, for a session never reported.
UNREPORTED_NOTIFICATION = json.dumps(
    {
        "session_id": "4f1c2d3e-0000-4000-8000-000000000001",
        "transcript_path": "/nonexistent/x.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "Notification",
        "message": "Usage limit reset — press enter to continue",
        "notification_type": "quota_auto_resume_stale",
    }
)

BARE = {"rewake", "rewake.cli", "rewake.exits"}
#: What a command that only looks at the state dir may load of rewake.
LOOKING = BARE | {
    "rewake.ids",
    "rewake.printable",
    "rewake.runner",
    "rewake.runner.clis",
    "rewake.runner.clis.hostzone",
    "rewake.runner.clis.providers",
    "rewake.runner.commands",
    "rewake.runner.commands.status",
    "rewake.runner.store",
    "rewake.runner.store.base",
    "rewake.runner.store.records",
}
HOOKING = LOOKING - {"rewake.runner.commands.status"} | {
    "rewake.runner.commands.hook",
    "rewake.runner.hook",
    "rewake.runner.hook.payload",
    "rewake.runner.hook.claude",
    "rewake.runner.hook.continuing",
    "rewake.runner.hook.transcript",
    "rewake.jsonl",
    "rewake.runner.process",
    "rewake.runner.process.guard",
}

#: (argv, stdin, the rewake modules it may load, at most how many modules in all). The counts
#: are today's (Python 3.11: 20, 20, 64, 58) with a little room.
BUDGETS = {
    "--version": (["--version"], "", BARE, 26),
    "--help": (["--help"], "", BARE, 26),
    "hook, unreported": (["hook", "claude"], UNREPORTED_PROMPT, HOOKING, 75),
    "hook, notification, unreported": (
        ["hook", "claude"],
        UNREPORTED_NOTIFICATION,
        HOOKING | {"rewake.runner.hook.native"},
        76,
    ),
    "ls, empty state dir": (["ls"], "", LOOKING, 68),
}


def imported(argv: list[str], stdin: str, state_dir: Path) -> tuple[object, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["REWAKE_STATE_DIR"] = str(state_dir)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), stdin],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["status"], answer["modules"]


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_a_command_imports_no_more_than_its_budget(name: str, tmp_path: Path) -> None:
    """--version, --help, the hook on an unreported session and `ls` on an empty state dir load
    no heavy package, no rewake module beyond their own, and few modules in all."""
    argv, stdin, allowed, most = BUDGETS[name]
    status, modules = imported(argv, stdin, tmp_path)
    assert status == 0
    heavy = sorted({m.split(".")[0] for m in modules} & set(HEAVY))
    assert not heavy, f"{name} loads {heavy}"
    extra = sorted(m for m in modules if m.startswith("rewake") and m not in allowed)
    assert not extra, f"{name} loads {extra}"
    assert len(modules) <= most, f"{name} loads {len(modules)} modules: {modules}"


@pytest.mark.parametrize("argv", [["ls"], ["show", "none-such"]])
def test_a_current_local_store_is_opened_without_alembic_or_httpx(
    argv: list[str], tmp_path: Path
) -> None:
    """`ls` and `show` over a local store already at HEAD load neither Alembic (only a schema
    to change needs it) nor httpx (only a remote store needs it)."""
    from rewake.runner.store.stores import LocalStore

    LocalStore.from_settings({"REWAKE_STATE_DIR": str(tmp_path)}).close()
    _status, modules = imported(argv, "", tmp_path)
    assert "sqlalchemy" in modules  # the store was opened
    loaded = {m.split(".")[0] for m in modules}
    assert not loaded & {"alembic", "httpx"}, sorted(loaded & {"alembic", "httpx"})


def test_the_help_summaries_are_the_commands_own() -> None:
    """`rewake --help` lists, in order, the help line each command's module registers."""
    full = cli.build_parser(every=True)._subparsers._group_actions[0]  # type: ignore[union-attr]
    brief = cli.build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    helps = [(a.dest, a.help) for a in full._choices_actions]
    assert helps == [(a.dest, a.help) for a in brief._choices_actions]
    assert helps == list(cli.SUMMARIES.items())


def run_rewake(args: list[str], state_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env["REWAKE_STATE_DIR"] = str(state_dir)
    return subprocess.run(
        [sys.executable, "-m", "rewake", *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("args", [["ls"], ["ls", "--json"], ["ls", "--state", "paused"]])
def test_ls_without_a_database_says_what_an_empty_one_says(args: list[str], tmp_path: Path) -> None:
    """`ls` on a state dir with no database prints what it prints over an empty database, and
    creates none."""
    fresh, migrated = tmp_path / "fresh", tmp_path / "migrated"
    from rewake.runner.store.stores import LocalStore

    LocalStore.from_settings({"REWAKE_STATE_DIR": str(migrated)}).close()
    assert (migrated / "rewake.db").exists()
    without, over_empty = run_rewake(args, fresh), run_rewake(args, migrated)
    assert (without.returncode, without.stdout) == (over_empty.returncode, over_empty.stdout)
    assert without.returncode == 0, without.stderr
    assert not (fresh / "rewake.db").exists()
