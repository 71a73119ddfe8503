"""The `rewake` command.

`rewake parse` must start fast, so this module imports nothing heavy at the top: the service's
and the sweeper's commands register themselves from `rewake.service_cli` and `rewake.sweeper.cli`,
which import FastAPI and SQLAlchemy only inside the functions that run them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rewake import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rewake",
        description="Resume AI coding CLI runs exactly once, when their usage limit resets.",
    )
    parser.add_argument("--version", action="version", version=f"rewake {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from rewake import parse_cli, service_cli
    from rewake.runner import run_cli, views_cli
    from rewake.sweeper import cli as sweeper_cli

    parse_cli.register(commands)
    service_cli.register(commands)
    sweeper_cli.register(commands)
    run_cli.register(commands)
    views_cli.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
