"""Run one attempt of a CLI: spawn it in its own process group, stream and render its output,
keep the raw output in the attempt's log, and stop it cleanly on Ctrl-C.

The CLI gets its own session (process group) so that the terminal's Ctrl-C reaches rewake
alone: rewake forwards SIGINT to the whole group, waits `stop_grace_s`, then sends SIGTERM, and
SIGKILL after as long again. A second Ctrl-C skips the wait. The clock is read once, when the
CLI has exited, and handed back as `ended_at` (the failure report's observed_at).
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any

from app.runner.providers import Event, Provider
from app.runner.render import Renderer

#: Characters of non-event output kept for the failure report (its end: the banner is there).
TAIL_CHARS = 64 * 1024
#: After the CLI exits, how long to wait for output its children still hold open.
DRAIN_S = 2.0


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


@dataclass
class Hooks:
    """Called from the supervising thread as the attempt goes on."""

    on_started: Callable[[], None] = lambda: None
    on_session: Callable[[str], None] = lambda _id: None


@dataclass
class _Stop:
    """Ctrl-C state: when the next, harder signal is due."""

    requested: int = 0
    next_signal_at: float | None = None
    sent: list[int] = field(default_factory=list)


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
) -> Finished:
    """Run `argv` to its end; raises ProgramNotFound when it cannot be started."""
    hooks = hooks or Hooks()
    out = out or sys.stdout
    err = err or sys.stderr
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        child = subprocess.Popen(  # noqa: S603  (the user's own command line, no shell)
            list(argv), cwd=cwd, env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except FileNotFoundError as error:
        raise ProgramNotFound(f"{argv[0]}: not found (is it installed and on PATH?)") from error
    stop = _Stop()
    previous = _install_stop_handlers(stop, child, stop_grace_s)
    try:
        return _follow(child, provider, log, hooks, stop, stop_grace_s, out, err)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _install_stop_handlers(
    stop: _Stop, child: subprocess.Popen[bytes], grace_s: float
) -> dict[int, Any]:
    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.requested += 1
        if stop.requested == 1:
            # Ask the CLI to stop as the terminal's Ctrl-C would have (a SIGTERM to rewake is
            # passed on as SIGTERM).
            _signal_group(child, signum, stop)
        else:  # asked again: do not wait out the grace
            _signal_group(child, _harder(stop), stop)
        stop.next_signal_at = time.monotonic() + grace_s

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    return previous


def _harder(stop: _Stop) -> int:
    return signal.SIGKILL if signal.SIGTERM in stop.sent else signal.SIGTERM


def _signal_group(child: subprocess.Popen[bytes], signum: int, stop: _Stop) -> None:
    if child.poll() is not None:
        return
    try:
        os.killpg(child.pid, signum)
    except ProcessLookupError:
        return
    stop.sent.append(signum)


def _escalate(child: subprocess.Popen[bytes], stop: _Stop, grace_s: float) -> None:
    """After a stop request, the next harder signal each `grace_s` (SIGTERM, then SIGKILL)."""
    if stop.next_signal_at is None or child.poll() is not None:
        return
    if time.monotonic() >= stop.next_signal_at:
        _signal_group(child, _harder(stop), stop)
        stop.next_signal_at = time.monotonic() + grace_s


def _follow(
    child: subprocess.Popen[bytes],
    provider: Provider,
    log: Path,
    hooks: Hooks,
    stop: _Stop,
    grace_s: float,
    out: IO[str],
    err: IO[str],
) -> Finished:
    assert child.stdout is not None and child.stderr is not None
    lines: queue.Queue[tuple[str, bytes | None]] = queue.Queue()
    pumps = [
        threading.Thread(target=_pump, args=(child.stdout, "out", lines), daemon=True),
        threading.Thread(target=_pump, args=(child.stderr, "err", lines), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    renderer = Renderer(provider.name)
    events: list[Event] = []
    tail: list[str] = []
    tail_chars = 0
    session_id: str | None = None
    started = False
    open_streams = 2
    exited_at: float | None = None
    with log.open("ab") as raw_log:
        while open_streams:
            _escalate(child, stop, grace_s)
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
                    tail_chars -= len(tail.pop(0)) + 1
                (out if name == "out" else err).write(renderer.plain(line))
                continue
            events.append(event)
            found = provider.session_id(event)
            if found and found != session_id:
                session_id = found
                hooks.on_session(found)
            if not started and provider.proves_started(event):
                started = True
                hooks.on_started()
            out.write(renderer.feed(event))
            out.flush()
        while child.poll() is None:
            _escalate(child, stop, grace_s)
            time.sleep(0.05)
    ended_at = datetime.now(UTC)
    code = child.returncode
    return Finished(
        exit_code=code, events=events, tail="\n".join(tail), session_id=session_id,
        started=started, halted=stop.requested > 0, ended_at=ended_at, log=log,
    )  # fmt: skip
