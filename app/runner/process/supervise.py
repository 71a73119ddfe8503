"""Run one attempt of a CLI: spawn it in its own process group, stream and narrate its output,
keep the raw output in the attempt's log, and stop it cleanly on Ctrl-C or a hang-up.

The CLI gets its own session (process group) so that the terminal's Ctrl-C reaches rewake
alone: rewake forwards SIGINT to the whole group (SIGTERM and SIGHUP as SIGTERM), waits
`stop_grace_s`, then sends SIGTERM, and SIGKILL after as long again. A second signal skips the
wait. Once the CLI itself has exited, whatever is left in its group (MCP servers, background
shells) gets SIGTERM and, after the grace, SIGKILL: a halted attempt leaves no orphans.

`StopSignals` stays installed for as long as its owner says (the Runner: until the attempt is
recorded), so a signal that arrives while the report is being sent is noted, not fatal. The
clock is read when the CLI has exited, and handed back as `ended_at` (the report's observed_at).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any

from rewake.exits import STARTING, tell_executor
from rewake.printable import printable
from rewake.runner.clis.providers import Event, Provider
from rewake.runner.process.narrate import Narrator
from rewake.runner.store import records
from rewake.spawn_env import without_rewake_settings

#: Characters of non-event output kept for the failure report (its end: the banner is there).
TAIL_CHARS = 64 * 1024
#: After the CLI exits, how long to wait for output its children still hold open.
DRAIN_S = 2.0
#: Event types the verdict and the report need whatever came after them (kept up to
#: CONTROL_EVENTS); every other event only among the last RECENT_EVENTS. The log keeps all.
CONTROL_TYPES = frozenset({
    "system", "init", "result", "rate_limit_event", "error", "turn.failed", "thread.started",
})  # fmt: skip
CONTROL_EVENTS = 1000
RECENT_EVENTS = 200
#: The signals that stop an attempt (a closed terminal sends SIGHUP).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Finished:
    """How one attempt ended."""

    exit_code: int
    events: list[Event]
    tail: str
    session_id: str | None
    #: The CLI showed the conversation under way (Provider.proves_started).
    started: bool
    #: Stopped by the user (Ctrl-C) or by a signal to rewake.
    halted: bool
    ended_at: datetime
    log: Path
    #: The model answered in this attempt (Provider.answered): a CLI that saves only answered
    #: conversations has this one saved.
    answered: bool = False


@dataclass
class Hooks:
    """Called from the supervising thread as the attempt goes on."""

    on_started: Callable[[], None] = lambda: None
    on_session: Callable[[str], None] = lambda _id: None


class EventWindow:
    """A session's events in bounded memory: control events (up to CONTROL_EVENTS) and the
    last RECENT_EVENTS of the rest, handed back in the order they came."""

    def __init__(self, control: int = CONTROL_EVENTS, recent: int = RECENT_EVENTS) -> None:
        self._control: deque[tuple[int, Event]] = deque(maxlen=control)
        self._recent: deque[tuple[int, Event]] = deque(maxlen=recent)
        self._seen = 0

    def add(self, event: Event) -> None:
        kept = self._control if event.get("type") in CONTROL_TYPES else self._recent
        kept.append((self._seen, event))
        self._seen += 1

    def __len__(self) -> int:
        return len(self._control) + len(self._recent)

    def events(self) -> list[Event]:
        return [event for _n, event in sorted([*self._control, *self._recent], key=_first)]


def _first(item: tuple[int, Event]) -> int:
    return item[0]


@dataclass
class StopSignals:
    """The stop request: which signals came, when the next, harder one is due, and the
    process group it goes to (none between attempts: a signal then is only noted)."""

    grace_s: float = 5.0
    requested: int = 0
    first_signal: int | None = None
    next_signal_at: float | None = None
    sent: list[int] = field(default_factory=list)
    pgid: int | None = None
    _previous: dict[int, Any] = field(default_factory=dict)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *_exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.requested += 1
        if self.first_signal is None:
            self.first_signal = signum
        if self.pgid is None:
            return  # between attempts (recording one): noted; the Runner stops after it
        if self.requested == 1:
            self.signal_group(first_kind(signum))
        else:  # asked again: do not wait out the grace
            self.signal_group(self.harder())
        self.next_signal_at = time.monotonic() + self.grace_s

    def deliver_noted(self) -> None:
        """Just after the group exists: send it a stop that came while there was none yet
        (the handler only noted it), and start the escalation, as the handler would have."""
        if not self.requested or self.next_signal_at is not None:
            return  # nothing came, or the handler already saw the group and sent it
        self.signal_group(first_kind(self.first_signal or signal.SIGINT))
        if self.requested > 1:  # asked again already: do not wait out the grace
            self.signal_group(self.harder())
        self.next_signal_at = time.monotonic() + self.grace_s

    def harder(self) -> int:
        return signal.SIGKILL if signal.SIGTERM in self.sent else signal.SIGTERM

    def signal_group(self, signum: int) -> bool:
        """Send `signum` to the CLI's group; False when nothing is left in it."""
        if self.pgid is None:
            return False
        try:
            os.killpg(self.pgid, signum)
        except ProcessLookupError:
            return False
        self.sent.append(signum)
        return True

    def escalate(self) -> None:
        """After a stop request, the next harder signal each grace (SIGTERM, then SIGKILL)."""
        if self.next_signal_at is not None and time.monotonic() >= self.next_signal_at:
            self.signal_group(self.harder())
            self.next_signal_at = time.monotonic() + self.grace_s

    def clear_group(self) -> None:
        """SIGTERM whatever is left in the group, SIGKILL it after the grace: the CLI's
        children (MCP servers, background shells) must not outlive a halted attempt."""
        if not self.signal_group(signal.SIGTERM):
            return
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline:
            if not self.signal_group(0):
                return
            time.sleep(0.05)
        self.signal_group(signal.SIGKILL)


def first_kind(signum: int) -> int:
    """The first signal the group gets for `signum`: SIGINT as the terminal's Ctrl-C would
    have sent; a hang-up or SIGTERM is passed on as SIGTERM (the CLI is in its own session: it
    would never see the terminal's SIGHUP)."""
    return signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM


class ProgramNotFound(OSError):
    """The CLI is not installed (or not on PATH)."""


def _pump(stream: IO[bytes], name: str, lines: queue.Queue[tuple[str, bytes | None]]) -> None:
    for raw in iter(stream.readline, b""):
        lines.put((name, raw))
    lines.put((name, None))


def _as_event(line: str) -> Event | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def supervise(
    argv: Sequence[str],
    *,
    provider: Provider,
    cwd: str,
    log: Path,
    env: Mapping[str, str] | None = None,
    hooks: Hooks | None = None,
    stop_grace_s: float = 5.0,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    stop: StopSignals | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> Finished:
    """Run `argv` to its end; raises ProgramNotFound when it cannot be started. With `stop`
    the caller owns the signal handlers (installed beyond this attempt); else they are
    installed for this call only."""
    if stop is None:
        with StopSignals(grace_s=stop_grace_s) as own:
            return supervise(
                argv, provider=provider, cwd=cwd, log=log, env=env, hooks=hooks, out=out,
                err=err, stop=own, clock=clock,
            )  # fmt: skip
    hooks = hooks or Hooks()
    out = out or sys.stdout
    err = err or sys.stderr
    log.parent.mkdir(parents=True, exist_ok=True)
    # Whatever the caller passes, no rewake setting reaches the CLI (a resume's caller passes
    # the agent's allowlist already: rewake.spawn_env).
    child_env = {
        **without_rewake_settings(os.environ if env is None else env),
        records.SUPERVISED_ENV: "1",
    }
    if stop.requested:
        # The stop came while the attempt was being prepared (the record, the log header, the
        # `started` write, which can take long on a busy store): there is no group to signal
        # yet, so the handler only noted it. Starting the CLI now would run it to its end.
        return _not_started(stop, log, clock)
    # A resume the command executor started: the look is over, the CLI starts now.
    tell_executor(STARTING, last=True)
    try:
        child = subprocess.Popen(  # noqa: S603  (the user's own command line, no shell)
            list(argv), cwd=cwd, env=child_env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except FileNotFoundError as error:
        raise ProgramNotFound(f"{argv[0]}: not found (is it installed and on PATH?)") from error
    # A new session: the group id is the child's pid, and stays valid after the child exits
    # for as long as anything is left in the group.
    stop.pgid = child.pid
    # A signal between the check above and this line found no group and was only noted.
    stop.deliver_noted()
    try:
        finished = _follow(child, provider, log, hooks, stop, out, err, clock)
        if stop.requested:
            stop.clear_group()
        return finished
    finally:
        stop.pgid = None
        stop.next_signal_at = None


def _not_started(stop: StopSignals, log: Path, clock: Callable[[], datetime]) -> Finished:
    """A halted attempt whose CLI was never spawned (a stop came before it could be)."""
    signum = stop.first_signal or signal.SIGINT
    note = f"not started: {signal.Signals(signum).name} came before the CLI was spawned"
    try:
        with log.open("a", encoding="utf-8") as raw_log:
            raw_log.write(f"# {note}\n")
    except OSError:
        pass  # the report says it too; a log that cannot be written must not hide the halt
    # exit_code as Popen reports a child killed by the signal: the Runner's exit status is
    # 128 + the signal for every halted attempt.
    return Finished(
        exit_code=-signum, events=[], tail=f"rewake: {note}", session_id=None, started=False,
        halted=True, ended_at=clock(), log=log,
    )  # fmt: skip


def _follow(
    child: subprocess.Popen[bytes],
    provider: Provider,
    log: Path,
    hooks: Hooks,
    stop: StopSignals,
    out: IO[str],
    err: IO[str],
    clock: Callable[[], datetime],
) -> Finished:
    assert child.stdout is not None and child.stderr is not None
    lines: queue.Queue[tuple[str, bytes | None]] = queue.Queue()
    pumps = [
        threading.Thread(target=_pump, args=(child.stdout, "out", lines), daemon=True),
        threading.Thread(target=_pump, args=(child.stderr, "err", lines), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    narrator = Narrator(provider.name)
    events = EventWindow()
    tail: deque[str] = deque()
    tail_chars = 0
    adopt = _Adopt(provider, hooks)
    open_streams = 2
    exited_at: float | None = None
    with log.open("ab") as raw_log:
        while open_streams:
            stop.escalate()
            if exited_at is None and child.poll() is not None:
                exited_at = time.monotonic()
            if exited_at is not None and time.monotonic() - exited_at > DRAIN_S:
                break  # a grandchild holds the pipes open; the CLI itself is gone
            try:
                name, raw = lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if raw is None:
                open_streams -= 1
                continue
            raw_log.write(raw)
            raw_log.flush()
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            event = _as_event(line) if name == "out" else None
            if event is None:
                tail.append(line)
                tail_chars += len(line) + 1
                while tail_chars > TAIL_CHARS and len(tail) > 1:
                    tail_chars -= len(tail.popleft()) + 1
                # The CLI's words, not its (or a prompt-injected model's) terminal controls.
                shown = printable(narrator.plain(line), newlines=True)
                (out if name == "out" else err).write(shown)
                continue
            events.add(event)
            adopt.feed(event)
            out.write(printable(narrator.feed(event), newlines=True))
            out.flush()
        while child.poll() is None:
            stop.escalate()
            time.sleep(0.05)
    if not open_streams:
        # Both pumps are done with them; when a grandchild still holds them open, a pump may
        # still be blocked reading, and closing under it could hang: those are left to exit.
        child.stdout.close()
        child.stderr.close()
    ended_at = clock()
    code = child.returncode
    return Finished(
        exit_code=code, events=events.events(), tail="\n".join(tail),
        session_id=adopt.session_id, started=adopt.started, halted=stop.requested > 0,
        ended_at=ended_at, log=log, answered=adopt.answered,
    )  # fmt: skip


class _Adopt:
    """Which session id the attempt ends with. An id is taken only once the CLI proved the
    conversation under way: a resume that finds no conversation still reports an id (a new,
    empty one) in its error result, and taking it would lose the real conversation's id."""

    def __init__(self, provider: Provider, hooks: Hooks) -> None:
        self.provider = provider
        self.hooks = hooks
        self.started = False
        self.answered = False
        self.session_id: str | None = None
        self._pending: str | None = None

    def feed(self, event: Event) -> None:
        if not self.answered and self.provider.answered(event):
            self.answered = True
        if not self.started and self.provider.proves_started(event):
            self.started = True
            self.hooks.on_started()
            if self._pending is not None:
                self._take(self._pending)
        found = self.provider.session_id(event)
        if not found or event.get("is_error") is True:
            return
        if self.started:
            self._take(found)
        else:
            self._pending = found

    def _take(self, found: str) -> None:
        if found != self.session_id:
            self.session_id = found
            self.hooks.on_session(found)
