"""Typing the resume into the tmux pane of the interactive CLI that holds the conversation
(issue 25): the pane found from the process, the screen checked before anything is typed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewake.runner.process import panes
from tests.support.slowdown import Wait

#: A stand-in for an interactive CLI at its prompt: prints Claude Code's prompt marker, and
#: writes every line typed to the file it is given.
PROMPTER = """import sys
out = open(sys.argv[1], "a", encoding="utf-8")
while True:
    print("❯ ", end="", flush=True)
    line = sys.stdin.readline()
    if not line:
        break
    out.write(line)
    out.flush()
"""

#: Claude Code 2.1.332's screen after "Stop and wait" (at its prompt), and with its own
#: continuation armed ("Wait here"), as tmux captured them.
AT_PROMPT = """❯ hi
  ⎿  You've hit your Opus limit · resets 11:36am (UTC)

────────────────────────────────────────
❯
────────────────────────────────────────
  ⏵⏵ auto mode on (shift+tab to cycle) · ← for agents
"""
WAITING = """❯ hi
  ⎿  You've hit your Opus limit · resets 11:31am (UTC)
────────────────────────────────────────
❯
────────────────────────────────────────
  ⚠ Usage limit reached · limit resets 11:31am
    Continuing automatically at 11:31am · Esc to cancel
"""
MENU = """  What do you want to do?

  ❯ 1. Stop and wait for limit to reset
    2. Wait here, then continue automatically at 11:31am
    3. Upgrade your plan

  Enter to confirm · Esc to cancel
"""


@pytest.mark.parametrize(
    ("screen", "ready"), [(AT_PROMPT, True), (WAITING, False), (MENU, False), ("$ ", False)]
)
def test_only_a_screen_at_the_prompt_is_typed_into(screen: str, ready: bool) -> None:
    """At its prompt: yes; its own continuation armed, a menu, or no Claude at all: no."""
    assert panes.at_prompt(screen) is ready


@pytest.fixture
def pane_with(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A private tmux server running PROMPTER in its one pane; (the typed-lines file, the
    socket)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed")
    socket_dir = tempfile.mkdtemp(prefix="rwk-pane-")
    socket = str(Path(socket_dir) / "s")
    script, typed = tmp_path / "prompter.py", tmp_path / "typed.txt"
    script.write_text(PROMPTER, encoding="utf-8")
    subprocess.run([tmux, "-S", socket, "-f", "/dev/null", "new-session", "-d", "-x", "100",
                    "-y", "20", sys.executable, str(script), str(typed)], check=True,
                   timeout=20)  # fmt: skip
    try:
        yield typed, socket
    finally:
        subprocess.run([tmux, "-S", socket, "kill-server"], check=False, timeout=20)
        shutil.rmtree(socket_dir, ignore_errors=True)


def screen(socket: str) -> str:
    done = subprocess.run(["tmux", "-S", socket, "capture-pane", "-p"], capture_output=True,
                          text=True, check=False, timeout=20)  # fmt: skip
    return done.stdout


def pane_pid(socket: str) -> int:
    out = subprocess.run(["tmux", "-S", socket, "list-panes", "-a", "-F", "#{pane_pid}"],
                         capture_output=True, text=True, check=True, timeout=20)  # fmt: skip
    return int(out.stdout.split()[0])


def test_the_pane_of_a_process_is_found_and_typed_into(
    pane_with: tuple[Path, str],
) -> None:
    """From the pane's process id: its tmux server's socket and pane; the prompt is typed and
    entered there, once."""
    typed, socket = pane_with
    pid = pane_pid(socket)
    pane = panes.find_pane(pid)
    assert pane is not None and pane.socket == socket
    wait = Wait(10)
    while not wait.over() and not panes.at_prompt(screen(socket)):
        time.sleep(0.1)
    assert panes.type_into(pane, "Continue the task\nfrom where it stopped.") is None
    wait = Wait(10)
    while not wait.over() and not typed.exists():
        time.sleep(0.1)
    time.sleep(0.3)
    assert typed.read_text(encoding="utf-8") == "Continue the task from where it stopped.\n"


def test_a_process_outside_tmux_has_no_pane() -> None:
    """This test's own process runs in no tmux pane (CI, a plain terminal): None."""
    import os

    if os.environ.get("TMUX"):
        pytest.skip("the tests run inside tmux here")
    assert panes.find_pane(os.getpid()) is None
