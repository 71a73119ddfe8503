"""Typing the resume into the terminal of an interactive CLI that holds the conversation.

When an interactive Claude Code still has the conversation open and will not continue by itself
(its menu answered "Stop and wait"), it is the conversation's one writer: rewake starts no
second, headless Claude beside it, and continues the conversation in that process instead, by
typing the resume prompt into its terminal where that terminal is a tmux pane. The pane is found
from the process itself (its ancestors up to the tmux server, the server's socket from the
kernel's table of unix sockets), and its screen must show the CLI waiting at its prompt, no menu
and no turn under way, before anything is typed. Linux only (/proc); anywhere else, and for a
terminal that is not a tmux pane, the caller says so and types nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: What the screen shows while Claude Code is not waiting at its prompt: a menu, a turn under
#: way, its own continuation armed.
BUSY = re.compile(r"Enter to confirm|Esc to cancel|esc to interrupt|Continuing ")
#: Claude Code's prompt line: the input box's marker, alone or with what is being typed.
PROMPT = re.compile(r"^\s*❯", re.MULTILINE)
#: Between the text and its Enter: keys that come in one burst are taken for a paste, and an
#: Enter inside a paste is a new line in the input box, not a submit.
PASTE_GAP_S = 0.5
#: How often Enter is pressed again while the text still sits in the input box.
ENTER_RETRIES = 2


@dataclass(frozen=True, slots=True)
class NotTyped:
    """Why the resume was not typed, and whether any key reached the pane before that (the
    screen check failed first: none did, and the conversation is as it was)."""

    reason: str
    keys_sent: bool = False


@dataclass(frozen=True, slots=True)
class Pane:
    """A tmux pane: the server's socket and the pane's id."""

    socket: str
    pane_id: str


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _server_socket(server: int) -> str | None:
    """The path of the unix socket the tmux server `server` listens on."""
    inodes = set()
    try:
        descriptors = list(Path(f"/proc/{server}/fd").iterdir())
        table = Path("/proc/net/unix").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for fd in descriptors:
        try:
            target = str(fd.readlink())
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].startswith("/"):
            return fields[7]
    return None


def find_pane(pid: int, tmux: str | None = None) -> Pane | None:
    """The tmux pane whose process is `pid` or one of its ancestors; None when `pid` runs in no
    tmux pane this user can reach."""
    tmux = tmux or shutil.which("tmux")
    if tmux is None:
        return None
    child, seen = pid, 0
    while child > 1 and seen < 64:
        fields = _stat_fields(child)
        if fields is None or len(fields) < 2:
            return None
        parent = int(fields[1])
        if _comm(parent).startswith("tmux"):
            socket = _server_socket(parent)
            if socket is None:
                return None
            return _pane_of(tmux, socket, child)
        child, seen = parent, seen + 1
    return None


def _pane_of(tmux: str, socket: str, pane_pid: int) -> Pane | None:
    listed = _tmux(tmux, socket, "list-panes", "-a", "-F", "#{pane_pid} #{pane_id}")
    for line in (listed or "").splitlines():
        number, _, pane_id = line.partition(" ")
        if number == str(pane_pid) and pane_id:
            return Pane(socket, pane_id)
    return None


def _tmux(tmux: str, socket: str, *args: str) -> str | None:
    try:
        done = subprocess.run(  # noqa: S603  (tmux, no shell)
            [tmux, "-S", socket, *args], capture_output=True, text=True, timeout=10,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def at_prompt(screen: str) -> bool:
    """Whether Claude Code's screen shows it waiting at its prompt: the prompt line is there,
    and no menu, no turn under way, no continuation of its own."""
    return bool(PROMPT.search(screen)) and not BUSY.search(screen)


def type_into(pane: Pane, text: str, tmux: str | None = None) -> NotTyped | None:
    """Type `text` and Enter into `pane` after checking its screen; None when typed, else why
    not, and whether some keys were sent before it stopped."""
    tmux = tmux or shutil.which("tmux")
    if tmux is None:
        return NotTyped("tmux is not installed here")
    screen = _tmux(tmux, pane.socket, "capture-pane", "-p", "-t", pane.pane_id)
    if screen is None:
        return NotTyped(f"tmux pane {pane.pane_id} cannot be read")
    if not at_prompt(screen):
        return NotTyped(f"tmux pane {pane.pane_id} does not show Claude Code waiting at its prompt")
    one_line = " ".join(text.split())
    if _tmux(tmux, pane.socket, "send-keys", "-t", pane.pane_id, "-l", one_line) is None:
        return NotTyped(f"typing into tmux pane {pane.pane_id} failed", keys_sent=True)
    for _ in range(1 + ENTER_RETRIES):
        time.sleep(PASTE_GAP_S)
        if _tmux(tmux, pane.socket, "send-keys", "-t", pane.pane_id, "Enter") is None:
            return NotTyped(f"pressing Enter in tmux pane {pane.pane_id} failed", keys_sent=True)
        time.sleep(3 * PASTE_GAP_S)
        if not _still_in_input(_tmux(tmux, pane.socket, "capture-pane", "-p", "-t", pane.pane_id)
                               or "", one_line):  # fmt: skip
            return None
    return NotTyped(f"the text stays in the input box of tmux pane {pane.pane_id}; Enter was "
                    "not taken", keys_sent=True)  # fmt: skip


def _still_in_input(screen: str, text: str) -> bool:
    """Whether the last prompt line on the screen still holds the start of `text`."""
    lines = [line for line in screen.splitlines() if PROMPT.match(line)]
    return bool(lines) and text[:20] in lines[-1]
