"""The `rewake` command table: each command is registered by the module the table names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rewake import cli


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
        " or m.startswith(('rewake.runner', 'rewake.sweeper', 'rewake.service_cli'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
