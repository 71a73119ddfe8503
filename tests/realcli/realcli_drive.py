"""Driving the real CLIs against the mock: a fresh HOME, TMPDIR and work directory per case,
an `env -i`-style environment that reaches nothing but 127.0.0.1, headless runs and
interactive runs under tmux (a private server socket per case, a 140x45 window).

The clock is read once per run, when the CLI has printed what the test parses: at exit for a
headless run, when the banner first shows for an interactive one. That instant (and the TZ the
CLI ran under) is what the parser is given.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.realcli_install import Pin, Unavailable, ensure, required

#: Headless runs that take longer than this are on a retry path the case did not ask for.
HEADLESS_TIMEOUT_S = 90
#: What every CLI is told so that it phones nowhere and never updates itself.
OFFLINE = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "NO_UPDATE_NOTIFIER": "1",
}


@functools.cache
def _checked(pin: Pin) -> Path:
    """`ensure` once per process: its `--version` check costs a node start."""
    return ensure(pin)


def cli_binary(pin: Pin) -> Path:
    """The pinned CLI, or a skip (a failure under REWAKE_REQUIRE_REALCLI=1) saying why not."""
    try:
        return _checked(pin)
    except Unavailable as why:
        if required():
            pytest.fail(f"REWAKE_REQUIRE_REALCLI=1 but {pin.package}@{pin.version}: {why}")
        pytest.skip(str(why))


def tmux_or_skip() -> str:
    found = shutil.which("tmux")
    if found:
        return found
    if required():
        pytest.fail("REWAKE_REQUIRE_REALCLI=1 but tmux is not installed")
    pytest.skip("tmux is not installed")


@dataclass
class Box:
    """One case's private world."""

    root: Path
    home: Path
    tmp: Path
    work: Path

    @classmethod
    def make(cls, root: Path) -> Box:
        home, tmp, work = root / "home", root / "tmp", root / "work"
        for folder in (home, tmp, work):
            folder.mkdir(parents=True, exist_ok=True)
        return cls(root, home, tmp, work)


def base_env(box: Box, binary: Path, zone: str | None, *, interactive: bool) -> dict[str, str]:
    env = {
        "PATH": f"{binary.parent}:{Path(shutil.which('node') or '/usr/bin/node').parent}"
        ":/usr/bin:/bin",
        "HOME": str(box.home),
        "TMPDIR": str(box.tmp),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color" if interactive else "dumb",
        **OFFLINE,
    }
    if not interactive:
        env["NO_COLOR"] = "1"
    if zone is not None:
        env["TZ"] = zone
    tree = os.environ.get("REWAKE_TEST_TREE")  # what the tier's conftest.py ends a module with
    if tree is not None:
        env["REWAKE_TEST_TREE"] = tree
    return env


def claude_env(box: Box, binary: Path, url: str, zone: str | None,
               *, interactive: bool = False) -> dict[str, str]:  # fmt: skip
    """Claude Code as a subscriber (the unified rate-limit headers are honoured only then)."""
    env = base_env(box, binary, zone, interactive=interactive)
    env.update(ANTHROPIC_BASE_URL=url, CLAUDE_CODE_OAUTH_TOKEN="sk-ant-oat01-mock-not-a-token")
    claude_json = {
        "hasCompletedOnboarding": True,
        "bypassPermissionsModeAccepted": True,
        "projects": {str(box.work): {"hasTrustDialogAccepted": True,
                                     "hasCompletedProjectOnboarding": True}},
    }  # fmt: skip
    (box.home / ".claude.json").write_text(json.dumps(claude_json))
    (box.home / ".claude").mkdir(exist_ok=True)
    return env


def codex_env(box: Box, binary: Path, url: str, zone: str | None) -> dict[str, str]:
    env = base_env(box, binary, zone, interactive=False)
    codex_home = box.home / ".codex"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "mock"\ncheck_for_update_on_startup = false\n\n'
        '[model_providers.mock]\nname = "mock"\n'
        f'base_url = "{url}/v1"\nenv_key = "MOCK_OPENAI_KEY"\nwire_api = "responses"\n\n'
        '[analytics]\nenabled = false\n\n[otel]\nexporter = "none"\n'
    )
    env.update(CODEX_HOME=str(codex_home), MOCK_OPENAI_KEY="sk-mock")
    return env


def gemini_env(box: Box, binary: Path, url: str, zone: str | None,
               *, interactive: bool = False) -> dict[str, str]:  # fmt: skip
    env = base_env(box, binary, zone, interactive=interactive)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    (box.home / ".gemini").mkdir(exist_ok=True)
    (box.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env.update(GEMINI_API_KEY="mock-not-a-key", GOOGLE_GEMINI_BASE_URL=url,
               GEMINI_CLI_TRUST_WORKSPACE="true")  # fmt: skip
    return env


@dataclass
class Ran:
    """What a CLI printed, and the instant at which it had printed it."""

    stdout: str
    stderr: str
    returncode: int | None
    observed_at: datetime
    duration_s: float

    def ended(self) -> str:
        """How the run ended, for a failure's message: its exit, its output's last lines."""
        return (f"exit {self.returncode} after {self.duration_s:.1f} s\n"
                f"stderr: {self.stderr[-1500:]}\nstdout: {self.stdout[-1500:]}")  # fmt: skip


def run_headless(argv: list[str], env: dict[str, str], cwd: Path,
                 timeout: float = HEADLESS_TIMEOUT_S) -> Ran:  # fmt: skip
    started = time.monotonic()
    done = run_ended(argv, env=env, cwd=cwd, capture_output=True, timeout=timeout)
    observed_at = datetime.now(UTC)  # once, when everything the CLI printed is in
    return Ran(done.stdout, done.stderr, done.returncode, observed_at,
               time.monotonic() - started)  # fmt: skip


class Tmux:
    """A tmux server of its own (socket in the case's folder) running one CLI window."""

    def __init__(self, box: Box, argv: list[str], env: dict[str, str]) -> None:
        self.tmux = tmux_or_skip()
        # A unix socket's path must stay under ~100 bytes; the case's folder may be longer.
        self._socket_dir = tempfile.mkdtemp(prefix="rwk-tmux-")
        self.socket = str(Path(self._socket_dir) / "s")
        self.box = box
        env_args = [f"{key}={value}" for key, value in env.items()]
        subprocess.run(
            [self.tmux, "-S", self.socket, "-f", "/dev/null", "new-session", "-d", "-x", "140",
             "-y", "45", "-c", str(box.work), "env", "-i", *env_args, *argv],
            check=True, timeout=20, env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color",
                                         "TMUX_TMPDIR": str(box.tmp)},
        )  # fmt: skip

    def _tmux(self, *args: str) -> str:
        done = subprocess.run([self.tmux, "-S", self.socket, *args], capture_output=True,
                              text=True, timeout=20, check=False)  # fmt: skip
        return done.stdout

    def screen(self) -> str:
        """The visible screen and its scrollback, as text (no escapes)."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-200")

    def send(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "0", *keys)

    def type_line(self, text: str) -> None:
        self._tmux("send-keys", "-t", "0", "-l", text)
        time.sleep(0.3)
        self._tmux("send-keys", "-t", "0", "Enter")

    def submit(self, text: str, requests: Callable[[], int]) -> None:
        """Type `text` and Enter, pressing Enter again only as `submit_heard` allows."""
        submit_heard(lambda: self.type_line(text), lambda: self.send("Enter"), requests,
                     self.screen)  # fmt: skip

    def wait_for(self, found: Callable[[str], bool], timeout: float) -> tuple[str, datetime]:
        """The first screen on which `found` holds, and the instant it was seen."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if found(screen):
                return screen, datetime.now(UTC)
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting on the screen; last screen:\n{screen}")

    def close(self) -> None:
        """End the CLI and everything it started, then the tmux server. Gemini survives the
        hang-up tmux sends and relaunches itself in a session of its own, so its processes
        are found by parentage (before the server goes) and ended by id."""
        panes = [int(p) for p in self._tmux("list-panes", "-a", "-F", "#{pane_pid}").split()]
        doomed = descendants(panes)
        self._tmux("kill-server")
        end_processes(doomed)
        shutil.rmtree(self._socket_dir, ignore_errors=True)


def submit_heard(type_line: Callable[[], None], press_enter: Callable[[], None],
                 requests: Callable[[], int], drawn: Callable[[], object], *, presses: int = 3,
                 wait_s: float = 15.0, quiet_s: float = 3.0, give_up_s: float = 120.0,
                 poll_s: float = 0.25) -> None:  # fmt: skip
    """Type a line and Enter, then press Enter again while `requests()` (how many requests the
    provider has seen) does not grow. On a loaded machine an interactive CLI has been seen to
    keep the typed line in its input box, the Enter lost or taken as part of a paste, and wait
    there for good.

    Enter is pressed again only once the CLI has drawn nothing new (`drawn()`: its screen, or
    how much it has written) for `quiet_s`: a CLI still drawing (a spinner: it took the line and
    is slow to send it) is left alone. A blind second Enter once reached Claude after its limit
    menu had opened, and chose "Stop and wait" there. A CLI that has drawn nothing since is idle
    or starved; if starved, the Enter waits in the terminal behind the first one and reaches an
    empty input box, where it does nothing. After `give_up_s` it returns, heard or not: the
    caller's wait for the screen then fails with what the CLI shows."""
    before = requests()
    type_line()
    pressed = 1
    deadline = time.monotonic() + wait_s
    give_up = time.monotonic() + give_up_s
    seen, still_since = drawn(), time.monotonic()
    while pressed < presses and time.monotonic() < give_up:
        if requests() > before:
            return
        now = time.monotonic()
        if now >= deadline - quiet_s:  # the screen matters only for the last quiet_s
            shown = drawn()
            if shown != seen:
                seen, still_since = shown, now
            elif now >= deadline and now - still_since >= quiet_s:
                press_enter()
                pressed += 1
                deadline = now + wait_s
        time.sleep(poll_s)


def run_ended(argv: list[str], *, timeout: float, capture_output: bool = False,
              **popen: Any) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`subprocess.run(argv, text=True, stdin=DEVNULL, ...)`, except that a run that does not
    end in time (or a test interrupted while it runs) ends with everything it started.

    subprocess.run kills the one process it started and leaves the rest running without a
    parent: the node process a Gemini CLI relaunches itself in, or the CLI under `rewake run`
    (in a session of its own), which then retries a limit for as long as it likes (one did so
    for 20 minutes after its test had failed on the timeout)."""
    if capture_output:
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    popen.setdefault("stdin", subprocess.DEVNULL)
    process = subprocess.Popen(argv, text=True, **popen)
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:
        end_tree(process)
        raise
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def end_tree(process: subprocess.Popen[Any], grace_s: float = 3.0) -> None:
    """End `process` and every process below it (found before any is signalled: a child
    whose parent has gone is no longer found by parentage), SIGKILL after `grace_s`, then
    reap it and close its pipes."""
    if process.poll() is None:
        end_processes(descendants([process.pid]), grace_s)
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
        process.communicate(timeout=10)  # reaps it; its pipes are closed once all have ended
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    process.wait()


def descendants(roots: list[int]) -> list[int]:
    """`roots` and every process below them, by parent id."""
    table = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True,
                           check=False, timeout=20).stdout  # fmt: skip
    children: dict[int, list[int]] = {}
    for line in table.splitlines():
        pid, ppid = (int(field) for field in line.split())
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def end_processes(pids: list[int], grace_s: float = 3.0) -> None:
    """SIGTERM each, then SIGKILL what is still there after `grace_s`."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if _alive(pid)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether `pid` has not ended: a zombie (ended, its parent has not yet reaped it) has,
    and waiting on it would only spend the grace."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def waits_for(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda screen: compiled.search(screen) is not None


def json_lines(text: str) -> list[dict[str, object]]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events
