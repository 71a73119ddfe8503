"""The command executor: run a program for the resume, without a shell.

`REWAKE_COMMAND` is a JSON array, an argv template such as
`["rewake", "run", "--resume-of", "{mark_id}", "--session", "{session_id}"]`. Placeholders are
filled with checked values (host ids in the API's alphabet, never starting with a dash; session
ids must be UUIDs), the prompt goes last after `--`, and the attempt key and audit note are in
the environment (`REWAKE_ATTEMPT_KEY`, `REWAKE_NOTE`, ...), never on the command line.

That environment is an allowlist (`rewake.spawn_env.command_environment`), not the sweeper's:
what a coding CLI needs, the names in REWAKE_PASS_ENV, and what `rewake run --resume-of` needs
to record the resume; never the API tokens, the webhook secret or the notify URL.

The program is started in its own session and given `grace_s` to fail: exiting 0 or still
running then is `done` (the resume started); exiting 7 (`rewake run --resume-of` found the
conversation moved on since the failed attempt, and started nothing) is `superseded`; exiting
otherwise non-zero is `failed`; a program that cannot be started is `failed` with nothing sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime

from rewake.executors.base import DEFAULT_PROMPT, Delivery, Lookup, Outcome, audit_note
from rewake.executors.templates import TemplateError, check_template, fill
from rewake.exits import Exit
from rewake.spawn_env import command_environment


class CommandConfigError(ValueError):
    """The command template cannot be used."""


def parse_argv_template(value: str | Sequence[str]) -> list[str]:
    """REWAKE_COMMAND as a list of strings: a JSON array, never split by a shell's rules."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError as error:
            raise CommandConfigError(
                'REWAKE_COMMAND must be a JSON array of strings, e.g. ["prog", "{run_id}"]'
            ) from error
    else:
        parsed = list(value)
    if not isinstance(parsed, list) or not parsed or not all(isinstance(i, str) for i in parsed):
        raise CommandConfigError("REWAKE_COMMAND must be a non-empty JSON array of strings")
    if "{" in parsed[0]:
        raise CommandConfigError("the program itself (the first item) cannot be a placeholder")
    for item in parsed:
        try:
            check_template(item)
        except TemplateError as error:
            raise CommandConfigError(str(error)) from error
    return list(parsed)


class CommandExecutor:
    """Spawns one process per resume."""

    name = "command"

    def __init__(
        self,
        argv_template: str | Sequence[str],
        *,
        prompt: str = DEFAULT_PROMPT,
        grace_s: float = 2.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.argv_template = parse_argv_template(argv_template)
        self.prompt = prompt
        self.grace_s = grace_s
        #: What the program may see of `env` (this process's environment by default).
        self._env = command_environment(os.environ if env is None else env)
        self._cwd = cwd

    def argv(self, delivery: Delivery) -> list[str]:
        """The command line for `delivery`: the filled template, `--`, the prompt."""
        return [fill(item, delivery) for item in self.argv_template] + ["--", self.prompt]

    def environment(self, delivery: Delivery) -> dict[str, str]:
        env = dict(self._env)
        env.update(
            REWAKE_ATTEMPT_KEY=delivery.attempt_key,
            REWAKE_MARK_ID=str(delivery.mark_id),
            REWAKE_ROOT_ID=delivery.root_id,
            REWAKE_RUN_ID=delivery.run_id,
            REWAKE_EXPECTED_ATTEMPT=str(delivery.attempt),
            REWAKE_NOTE=audit_note(delivery),
        )
        return env

    def deliver(self, delivery: Delivery) -> Outcome:
        try:
            argv = self.argv(delivery)
        except TemplateError as error:
            return Outcome("failed", "bad_placeholder", f"nothing was started: {error}")
        try:
            child = subprocess.Popen(  # noqa: S603  (argv list, no shell; values checked above)
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self.environment(delivery),
                cwd=self._cwd,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as error:
            return Outcome("failed", "spawn_failed", f"nothing was started: {error}")
        try:
            status = child.wait(timeout=self.grace_s)
        except subprocess.TimeoutExpired:
            # The resume runs on; a thread collects its exit status so it never lingers as a
            # zombie (the program was started in its own session and outlives this one).
            threading.Thread(
                target=child.wait, name=f"rewake-child-{child.pid}", daemon=True
            ).start()
            return Outcome("done", "spawned", f"pid {child.pid} still running")
        if status == 0:
            return Outcome("done", "exit_0", f"pid {child.pid} exited 0")
        if status == Exit.SUPERSEDED:
            return Outcome(
                "superseded", "attempt_moved_on", f"pid {child.pid} exited {status}: the "
                "conversation moved on since the failed attempt (its CLI continued it, or a "
                "person did); nothing was resumed",
            )  # fmt: skip
        return Outcome("failed", f"exit_{status}", f"pid {child.pid} exited {status}")

    def lookup(self, delivery: Delivery, now: datetime) -> Lookup | None:
        return None

    def close(self) -> None:
        return None
