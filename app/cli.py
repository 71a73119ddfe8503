"""The `rewake` command.

Every prompt typed in Claude Code waits for `rewake hook`, and `rewake parse` must start fast,
so the commands are a table of modules and only the module of the command asked for is
imported. `--help`, `--version` and a mistyped command import none: the table's one-line
summaries stand in for the commands (a test holds them equal to each command's own help).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from rewake import __version__
from rewake.exits import LOOKING, Exit, tell_executor

#: The module that registers each command. Only the module of the command asked for is
#: imported, so `rewake parse` never loads the service, the sweeper or the runner.
COMMANDS: dict[str, str] = {
    "parse": "rewake.parse_cli",
    "serve": "rewake.service_cli",
    "migrate": "rewake.service_cli",
    "sweep": "rewake.service_cli",
    "run": "rewake.runner.commands.run",
    "hook": "rewake.runner.commands.hook",
    "ls": "rewake.runner.commands.status",
    "show": "rewake.runner.commands.status",
    "auto-resume": "rewake.runner.commands.status",
    "doctor": "rewake.runner.commands.status",
    "setup": "rewake.runner.commands.setup",
    "cancel": "rewake.runner.commands.manage",
    "rm": "rewake.runner.commands.manage",
    "resolve": "rewake.runner.commands.manage",
    "logs": "rewake.runner.commands.manage",
}

#: Each command's line in `rewake --help`: the help its module registers it with.
SUMMARIES: dict[str, str] = {
    "parse": "parse CLI output into a Verdict (JSON)",
    "serve": "run the HTTP API and a sweeper (upgrades the schema first)",
    "sweep": "fire due auto-resume marks (run beside the API, any number of replicas)",
    "migrate": "upgrade the database schema to this version's",
    "run": "run claude, codex or gemini headless; record limits; resume once after the reset",
    "hook": "report an interactive Claude Code session's failed turn, or its continuation",
    "ls": "list sessions: state, reset, resume due, mark",
    "show": "one session: banner, countdowns, mark, timeline",
    "auto-resume": "turn auto-resume on or off for a session paused on a limit",
    "doctor": "check the CLIs' flags, the store, the sweeper and the state dir",
    "setup": "install the sweeper as a user service, or rewake's hooks into Claude Code",
    "cancel": "cancel a session (final; clears its armed mark)",
    "rm": "delete a finished or cancelled session (a tombstone is kept)",
    "resolve": "settle a session's uncertain mark: the resume was done, or not sent",
    "logs": "print a session's attempt log (the latest)",
}

#: The shells shtab writes completion scripts for.
SHELLS = ("bash", "zsh", "tcsh")


#: The shell function that completes a session's name, and its definition per shell: the run
#: records' names in the state dir (as rewake.runner.store.records.state_dir finds it), read
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
    """Prints the completion script that shtab generates from the whole parser (every command
    registered by its module, with its options), then exits. shtab is imported only here, as a
    command's module is: it costs `rewake parse` a tenth of its start-up."""

    def __call__(
        self, parser: argparse.ArgumentParser, _ns: argparse.Namespace, shell: Any, _opt: Any = None
    ) -> None:
        shtab = importlib.import_module("shtab")
        full = build_parser(every=True)
        complete_session_names(full)
        print(shtab.complete(full, shell=shell, preamble=SESSION_PREAMBLE))
        parser.exit(0)


def build_parser(command: str | None = None, *, every: bool = False) -> argparse.ArgumentParser:
    """The `rewake` parser with `command` registered by its module; when `command` names none,
    every command by its summary alone, or (`every`) by its module."""
    parser = argparse.ArgumentParser(
        prog="rewake",
        description="Resume AI coding CLI runs exactly once, when their usage limit resets.",
    )
    parser.add_argument("--version", action="version", version=f"rewake {__version__}")
    parser.add_argument(
        "--print-completion",
        choices=SHELLS,
        action=PrintCompletion,
        help="print the completion script for this shell (e.g. `source <(rewake "
        "--print-completion bash)`)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command]).register(commands)
    elif every:
        for module in dict.fromkeys(COMMANDS.values()):
            importlib.import_module(module).register(commands)
    else:
        for name, summary in SUMMARIES.items():
            commands.add_parser(name, help=summary)
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
    # Started by the command executor: say at once that this is rewake looking before it
    # resumes, so that the executor waits for the look's answer (rewake.exits.LOOK_FD_ENV).
    tell_executor(LOOKING)
    # The first word that is no option is the command; the one top-level option with a value,
    # --print-completion, is followed by a shell's name, which is no command (its action
    # builds the whole parser itself).
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
