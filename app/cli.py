"""The `rewake` command.

`rewake parse` must start fast, so the commands are a table of modules and only the module
of the command asked for is imported (every one for `--help` or a mistyped command).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rewake import __version__

#: The module that registers each command. Only the module of the command asked for is
#: imported, so `rewake parse` never loads the service, the sweeper or the runner.
COMMANDS: dict[str, str] = {
    "parse": "rewake.parse_cli",
    "serve": "rewake.service_cli",
    "migrate": "rewake.service_cli",
    "sweep": "rewake.service_cli",
    "run": "rewake.runner.commands.run",
    "hook": "rewake.runner.commands.views",
    "ls": "rewake.runner.commands.views",
    "show": "rewake.runner.commands.views",
    "auto-resume": "rewake.runner.commands.views",
    "doctor": "rewake.runner.commands.views",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `rewake` parser with `command` registered, or every command when it names none."""
    parser = argparse.ArgumentParser(
        prog="rewake",
        description="Resume AI coding CLI runs exactly once, when their usage limit resets.",
    )
    parser.add_argument("--version", action="version", version=f"rewake {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(module).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The top-level parser takes no option with a value, so the first word is the command.
    command = next((word for word in arguments if not word.startswith("-")), None)
    args = build_parser(command).parse_args(arguments)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
