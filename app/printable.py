"""Text from outside made safe for a terminal: a CLI's output, a host's report or answer, a
store's error. One function, `printable`, stands between such text and every terminal rewake
writes to (`rewake run`, `ls`, `show`, `auto-resume`, `hook`, `doctor`); `json_printable` does
the same for `--json`.

A terminal obeys control characters: ESC and the 8-bit C1 codes start sequences that set the
window title (OSC 0), write the clipboard (OSC 52), print links (OSC 8) or clear the screen
(CSI), and CR or BS can paint over what was printed. Anyone who can report a failure, or a
webhook host answering a resume, could otherwise use the user's terminal. Each such character
is shown as a visible escape (`\\x1b`, `\\x9b`), so the text is still there to be read; colour
codes a CLI printed (CSI ... m) carry no words and are dropped.

Imports nothing of rewake: the runner and the service may both use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: A colour or style sequence (SGR) with its 7-bit introducer: dropped whole.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
#: Every character a terminal may act on rather than show: C0 (but tab), DEL, C1; the Unicode
#: line and paragraph separators; the bidirectional controls that reorder what is shown.
_CONTROL = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_CONTROL_KEEPING_NEWLINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
#: The same characters as JSON can escape them: C0 is escaped by `json.dumps` already.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(found: re.Match[str]) -> str:
    code = ord(found.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any, *, newlines: bool = False) -> str:
    """`text` (made a str) with no character a terminal would act on: colour sequences
    dropped, every other control character shown as a visible escape. With `newlines`, line
    feeds are kept (a block of CLI output); otherwise they are escaped too (one line)."""
    value = text if isinstance(text, str) else str(text)
    value = _SGR.sub("", value)
    pattern = _CONTROL_KEEPING_NEWLINES if newlines else _CONTROL
    return pattern.sub(_visible, value)


def escaped(text: Any) -> str:
    """`text` (made a str) on one line with every control character, line feeds and colour
    sequences included, shown as a visible escape and none dropped: for a log line, where a
    request's path or a host's words must neither start a forged line nor lose a character
    that someone may need to see."""
    value = text if isinstance(text, str) else str(text)
    return _CONTROL.sub(_visible, value)


def json_printable(value: Any, **dumps: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **dumps)` with the characters JSON leaves raw but
    a terminal acts on (DEL, C1 such as U+009B CSI and U+009D OSC, the Unicode separators and
    bidirectional controls) written as `\\u` escapes: the same JSON value, safe to print."""
    text = json.dumps(value, ensure_ascii=False, **dumps)
    return _JSON_UNSAFE.sub(lambda found: f"\\u{ord(found.group(0)):04x}", text)
