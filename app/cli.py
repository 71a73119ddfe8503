"""The `rewake` command.

`rewake parse` must start fast, so this module imports nothing heavy at the top: the service's
commands register themselves from `app.service_cli`, which imports FastAPI and SQLAlchemy only
inside the functions that run them.
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
    from app import parse_cli

    parse_cli.register(commands)
    try:
        from app import service_cli
    except ImportError:  # pragma: no cover - the service module is part of every install
        pass
    else:
        service_cli.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
