"""The `rewake` command.

`rewake parse` must start fast, so this module imports nothing heavy at the top: the service's
and the sweeper's commands register themselves from `app.service_cli` and `app.sweeper.cli`,
which import FastAPI and SQLAlchemy only inside the functions that run them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rewake",
        description="Resume AI coding CLI runs exactly once, when their usage limit resets.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from app import parse_cli, service_cli
    from app.runner import run_cli, views_cli
    from app.sweeper import cli as sweeper_cli

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
