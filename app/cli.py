"""The `rewake` command.

`rewake parse` must start fast, so the commands are a table of modules and only the module
of the command asked for is imported (every one for `--help` or a mistyped command).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from rewake import __version__
from rewake.exits import Exit

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
    "setup": "rewake.runner.commands.setup",
    "cancel": "rewake.runner.commands.manage",
    "rm": "rewake.runner.commands.manage",
    "resolve": "rewake.runner.commands.manage",
    "logs": "rewake.runner.commands.manage",
}


#: The shells shtab writes completion scripts for.
SHELLS = ("bash", "zsh", "tcsh")


#: The shell function that completes a session's name, and its definition per shell: the run
#: records' names in the state dir (as rewake.runner.local.records.state_dir finds it), read
#: without starting Python, so a tab press stays instant.
SESSION_COMPLETER = "_rewake_sessions"
_SESSIONS_DIR = "${REWAKE_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/rewake}/runs"
SESSION_PREAMBLE = {
    "bash": (
        f"{SESSION_COMPLETER}() {{\n"
        f'  local f names=(); for f in "{_SESSIONS_DIR}"/*.json; do\n'
        '    [ -e "$f" ] && f="${f##*/}" && names+=("${f%.json}"); done\n'
        '  compgen -W "${names[*]}" -- "$1"\n'
        "}\n"
    ),
    "zsh": (
        f"{SESSION_COMPLETER}() {{\n"
        f'  local -a names; names=("{_SESSIONS_DIR}"/*.json(N:t:r))\n'
        "  compadd -a names\n"
        "}\n"
    ),
}


def complete_session_names(parser: argparse.ArgumentParser) -> None:
    """Mark every argument that names a session (a command's NAME, `run --resume NAME`) for
    shtab to complete with the sessions' names."""
    for action in parser._actions:  # argparse keeps its actions there
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                for argument in sub._actions:
                    # A new run's --name names no existing session.
                    if argument.dest == "resume" or (
                        argument.dest == "name" and not argument.option_strings
                    ):
                        argument.complete = {shell: SESSION_COMPLETER for shell in SESSION_PREAMBLE}


class PrintCompletion(argparse.Action):
    """Prints the completion script that shtab generates from the whole parser, then exits.
    shtab is imported only here, as a command's module is: it costs `rewake parse` a tenth of
    its start-up."""

    def __call__(
        self, parser: argparse.ArgumentParser, _ns: argparse.Namespace, shell: Any, _opt: Any = None
    ) -> None:
        shtab = importlib.import_module("shtab")
        complete_session_names(parser)
        print(shtab.complete(parser, shell=shell, preamble=SESSION_PREAMBLE))
        parser.exit(0)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `rewake` parser with `command` registered, or every command when it names none."""
    parser = argparse.ArgumentParser(
        prog="rewake",
        description="Resume AI coding CLI runs exactly once, when their usage limit resets.",
    )
    parser.add_argument("--version", action="version", version=f"rewake {__version__}")
    # `--print-completion` names no command, so every command is registered before it prints.
    parser.add_argument(
        "--print-completion",
        choices=SHELLS,
        action=PrintCompletion,
        help="print the completion script for this shell (e.g. `source <(rewake "
        "--print-completion bash)`)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(module).register(commands)
    return parser


#: The commands that start programs (the command executor's): their secrets leave the
#: environment first (rewake.secret_env), which re-executes this very command line.
SEALED = frozenset({"serve", "sweep"})


def _seal() -> int | None:
    from rewake.secret_env import SecretError, seal_environment

    try:
        seal_environment()
    except SecretError as error:
        print(f"rewake: {error}", file=sys.stderr)
        return Exit.USAGE
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The first word that is no option is the command; the one top-level option with a value,
    # --print-completion, is followed by a shell's name, which is no command: every command
    # is then registered, as the completion script needs.
    command = next((word for word in arguments if not word.startswith("-")), None)
    if command in SEALED and arguments == sys.argv[1:]:
        # Before the service's modules load, which the re-executed image loads again.
        sealed = _seal()
        if sealed is not None:
            return sealed
    try:
        args = build_parser(command).parse_args(arguments)
        result: int = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`rewake parse ... | head`): nothing is wrong, and nothing more
        # is written; stdout points at /dev/null so that the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.BROKEN_PIPE
    return result


if __name__ == "__main__":
    sys.exit(main())
