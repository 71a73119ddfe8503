"""The command executor: run a program for the resume, without a shell.

`REWAKE_COMMAND` is a JSON array, an argv template such as
`["rewake", "run", "--resume-of", "{mark_id}", "--session", "{session_id}"]`. Placeholders are
filled with checked values (host ids in the API's alphabet, never starting with a dash; session
ids must be UUIDs), the prompt goes last after `--`, and the attempt key and audit note are in
the environment (`REWAKE_ATTEMPT_KEY`, `REWAKE_NOTE`, ...), never on the command line.

That environment is an allowlist (`rewake.spawn_env.command_environment`), not the sweeper's:
what a coding CLI needs, the names in REWAKE_PASS_ENV, and what `rewake run --resume-of` needs
to record the resume; never the API tokens, the webhook secret or the notify URL.

The program is also told where the mark lives (`MarkStore`), so that it records the resume
there: the URL of the service whose sweeper fired it, with a credential for that one resume
(`rewake.security.resume_credential`), or the database the sweeper itself uses. What the
sweeper's own environment says of REWAKE_URL, REWAKE_TOKEN or REWAKE_DATABASE_URL is then not
passed on: the program could only record the resume in another store.

The program is started in its own session and given `grace_s` to fail: exiting 0 or still
running then is `done` (the resume started). `rewake run --resume-of` first looks (did the
conversation move on? does an open CLI hold it?), which can take longer than the grace on a
busy machine: it says so through a pipe as it starts (rewake.exits.LOOK_FD_ENV) and is then
waited for until it says the CLI starts (`done`, `started`) or exits, LOOK_WAIT_S at most, so
that its answer counts. Exiting 7 (`rewake run --resume-of` found the
conversation moved on since the failed attempt, and started nothing) is `superseded`; exiting
8 (it sent nothing because an open interactive CLI holds the conversation: rewake cannot reach
its terminal, or it said it continues by itself and has not yet) defers the mark: it goes back
to `armed`, to be looked at again; exiting otherwise non-zero is `failed`; a program that
cannot be started is `failed` with nothing sent.
A failure says why in the program's own words: the last line it wrote to stderr (`rewake run`
ends with what stopped it).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from rewake.executors.base import DEFAULT_PROMPT, Delivery, Lookup, Outcome, audit_note
from rewake.executors.templates import TemplateError, check_template, fill
from rewake.exits import LOOK_FD_ENV, LOOKING, STARTING, Exit
from rewake.marks.states import MarkState
from rewake.security.resume_credential import mint
from rewake.spawn_env import command_environment, without_password


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


#: The store settings a program could record into; replaced by the mark's own store.
STORE_SETTINGS = ("REWAKE_URL", "REWAKE_TOKEN", "REWAKE_DATABASE_URL")


@dataclass(frozen=True, slots=True)
class MarkStore:
    """Where the sweeper keeps its marks: a service (its URL, and the key of the credentials it
    accepts for one resume; None when it needs no token) or a database URL."""

    service_url: str | None = None
    credential_key: bytes | None = None
    database_url: str | None = None

    def environment(self, delivery: Delivery) -> dict[str, str]:
        """The settings that make `rewake run --resume-of` record into this store."""
        if self.service_url:
            env = {"REWAKE_URL": self.service_url}
            if self.credential_key is not None:
                env["REWAKE_TOKEN"] = mint(
                    self.credential_key, root_id=delivery.root_id, run_id=delivery.run_id,
                    mark_id=delivery.mark_id, attempt_key=delivery.attempt_key,
                )  # fmt: skip
            return env
        if self.database_url:
            # Never the service's password: the program is where the agent runs (spawn_env).
            return {"REWAKE_DATABASE_URL": without_password(self.database_url)}
        return {}


#: How much of the program's stderr is kept to explain a failure, and how long a line may be.
TAIL_LINES = 40
LINE_CHARS = 500
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class StderrTail:
    """The last lines the program wrote to stderr, read by a thread for as long as it writes
    (a pipe nobody reads would block it once full)."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)
        self._done = threading.Event()
        self._stream = child.stderr
        threading.Thread(target=self._drain, name=f"rewake-stderr-{child.pid}", daemon=True).start()

    def _drain(self) -> None:
        try:
            if self._stream is not None:
                for raw in self._stream:
                    self._lines.append(raw.decode("utf-8", "replace")[:LINE_CHARS])
        finally:
            if self._stream is not None:
                self._stream.close()
            self._done.set()

    def last_line(self, wait_s: float = 1.0) -> str | None:
        """The last line that says something (control sequences and blank lines left out);
        waits up to `wait_s` for the rest of the output of a program that exited."""
        self._done.wait(wait_s)
        for line in reversed(list(self._lines)):
            text = " ".join(_ANSI.sub("", line).split())
            if any(char.isalnum() for char in text):
                return text
        return None


#: How long a program that said it looks (rewake.exits.LOOKING) is waited for, at most, before
#: it counts as started: a look reads a few files and asks the store, seconds at worst.
LOOK_WAIT_S = 30.0
_POLL_S = 0.05


def _watch(child: subprocess.Popen[bytes], look: int, grace_s: float) -> tuple[int | None, bool]:
    """The program's exit status, or None while it runs on; and whether it said it starts the
    resume. Any program is given `grace_s` (from its start) to fail; one that said it looks is
    waited for until it says it starts (the look is over: then to the end of the grace) or
    exits, LOOK_WAIT_S at most, so that a look longer than the grace still ends in its own
    answer (7: moved on, 8: wait) instead of `spawned`."""
    graced = deadline = time.monotonic() + grace_s
    heard = b""
    listening = True
    while True:
        status = child.poll()
        if status is not None:
            return status, False
        left = deadline - time.monotonic()
        if left <= 0:
            return None, STARTING in heard
        if not listening:
            time.sleep(min(left, _POLL_S))
            continue
        readable, _, _ = select.select([look], [], [], min(left, _POLL_S))
        if not readable:
            continue
        chunk = os.read(look, 64)
        if not chunk:
            listening = False  # the program closed it (or exited): its status decides
            continue
        heard += chunk
        if STARTING in heard:
            # The look is over and the CLI starts: the grace (from the start) still catches
            # a resume that fails at once, as for any program.
            deadline = graced
            listening = False
        elif LOOKING in heard:
            deadline = max(deadline, time.monotonic() + LOOK_WAIT_S)


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
        store: MarkStore | None = None,
    ) -> None:
        self.argv_template = parse_argv_template(argv_template)
        self.prompt = prompt
        self.grace_s = grace_s
        #: What the program may see of `env` (this process's environment by default).
        self._env = command_environment(os.environ if env is None else env)
        self._cwd = cwd
        self._store = store

    def argv(self, delivery: Delivery) -> list[str]:
        """The command line for `delivery`: the filled template, `--`, the prompt."""
        return [fill(item, delivery) for item in self.argv_template] + ["--", self.prompt]

    def environment(self, delivery: Delivery) -> dict[str, str]:
        env = dict(self._env)
        if self._store is not None:
            for name in STORE_SETTINGS:
                env.pop(name, None)
            env.update(self._store.environment(delivery))
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
            return Outcome(MarkState.FAILED, "bad_placeholder", f"nothing was started: {error}")
        # The look's pipe (rewake.exits.LOOK_FD_ENV): the program's end of it is passed by number.
        look_read, look_write = os.pipe()
        env = {**self.environment(delivery), LOOK_FD_ENV: str(look_write)}
        try:
            child = subprocess.Popen(  # noqa: S603  (argv list, no shell; values checked above)
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self._cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=(look_write,),
            )
        except OSError as error:
            os.close(look_read)
            return Outcome(MarkState.FAILED, "spawn_failed", f"nothing was started: {error}")
        finally:
            os.close(look_write)
        said = StderrTail(child)
        try:
            status, started = _watch(child, look_read, self.grace_s)
        finally:
            os.close(look_read)
        if status is None:
            # The resume runs on; a thread collects its exit status so it never lingers as a
            # zombie (the program was started in its own session and outlives this one).
            threading.Thread(
                target=child.wait, name=f"rewake-child-{child.pid}", daemon=True
            ).start()
            if started:
                return Outcome(MarkState.DONE, "started", f"pid {child.pid} started the resume")
            return Outcome(MarkState.DONE, "spawned", f"pid {child.pid} still running")
        if status == 0:
            return Outcome(MarkState.DONE, "exit_0", f"pid {child.pid} exited 0")
        reason = said.last_line()
        if status == Exit.SUPERSEDED:
            moved_on = reason or (
                "the conversation moved on since the failed attempt (its CLI continued it, or a "
                "person did)"
            )
            return Outcome(
                MarkState.SUPERSEDED,
                "attempt_moved_on",
                f"exited {status}: {moved_on}; nothing was resumed",
            )
        if status == Exit.DEFERRED:
            waits = reason or "an open interactive CLI holds the conversation"
            detail = f"{waits}; nothing was sent, the mark waits"
            return Outcome(MarkState.ARMED, "deferred", detail)
        detail = f"exited {status}" + (f": {reason}" if reason else " (it said nothing on stderr)")
        return Outcome(MarkState.FAILED, f"exit_{status}", detail)

    def lookup(self, delivery: Delivery, now: datetime) -> Lookup | None:
        return None

    def close(self) -> None:
        return None
