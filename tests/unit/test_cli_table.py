"""The `rewake` command table: each command is registered by the module the table names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewake import cli
from tests.support.db import migrate


def registered(parser: object) -> set[str]:
    """The command names a built parser accepts."""
    actions = getattr(parser, "_subparsers")._group_actions  # noqa: B009
    return {name for action in actions for name in action.choices}


def test_the_full_parser_has_exactly_the_commands_of_the_table() -> None:
    """Without a command every module registers, and they register the table's names only."""
    assert registered(cli.build_parser()) == set(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_each_command_is_registered_by_its_own_module(command: str) -> None:
    """Building the parser for one command registers that command (its module's only)."""
    assert command in registered(cli.build_parser(command))


def test_rewake_parse_imports_no_service_sweeper_or_runner() -> None:
    """`rewake parse` loads neither FastAPI, SQLAlchemy nor the runner's modules."""
    probe = (
        "import sys; from rewake import cli; cli.build_parser('parse');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'sqlalchemy')"
        " or m.startswith(('rewake.runner', 'rewake.sweeper', 'rewake.service_cli', 'rewake.db'))"
        " or m == 'shtab'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_rewake_run_imports_no_web_service() -> None:
    """`rewake run` supervises a CLI on a local store: no FastAPI, uvicorn, API or page."""
    probe = (
        "import sys; from rewake import cli; cli.build_parser('run');"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'uvicorn')"
        " or m.startswith(('rewake.api', 'rewake.web', 'rewake.main'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_rewake_sweep_loads_no_web_stack(tmp_path: Path) -> None:
    """`rewake sweep --once` over a current database sweeps without FastAPI, Starlette,
    uvicorn, Jinja2, the API or the page: a sidecar loads what a sweeper needs."""
    url = f"sqlite:///{tmp_path / 'rewake.db'}"
    migrate(url)
    probe = (
        "import sys; from rewake import cli; status = cli.main(['sweep', '--once']);"
        "print(status, sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('fastapi', 'starlette', 'uvicorn', 'jinja2')"
        " or m.startswith(('rewake.api', 'rewake.web'))))"
    )
    env = {**os.environ, "REWAKE_DATABASE_URL": url, "REWAKE_STATE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env=env, cwd=tmp_path)  # fmt: skip
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stdout + out.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_completion_script_knows_every_command(shell: str) -> None:
    """`rewake --print-completion SHELL` prints a script naming every command of the table."""
    out = subprocess.run(
        [sys.executable, "-m", "rewake", "--print-completion", shell],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert all(command in out.stdout for command in cli.COMMANDS)


def test_bash_accepts_the_completion_script() -> None:
    """bash sources the script and registers a completion function for `rewake`."""
    script = subprocess.run(
        [sys.executable, "-m", "rewake", "--print-completion", "bash"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", 'eval "$SCRIPT" && complete -p rewake'],
        env={"SCRIPT": script, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and "-F _shtab_rewake rewake" in done.stdout, done.stderr


def test_a_reader_that_goes_away_ends_the_output_quietly(tmp_path: Path) -> None:
    """`rewake parse --jsonl ... | head -1`: no BrokenPipeError traceback, status 141."""
    lines = tmp_path / "many.jsonl"
    line = (
        '{"id": "1", "text": "You\'ve hit your limit \u00b7 resets 8pm (Europe/Berlin)", '
        '"observed_at": "2026-04-01T13:42:35Z"}\n'
    )
    lines.write_text(line * 5000)
    reader = subprocess.Popen(
        [sys.executable, "-m", "rewake", "parse", "--jsonl", str(lines)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.readline()
    reader.stdout.close()  # as `head -1` does after its line
    errors = reader.stderr.read().decode()
    reader.stderr.close()
    assert reader.wait(timeout=60) == 141
    assert "Traceback" not in errors, errors
