"""The JSON-object rows at the end of a JSON-lines file: a CLI's transcript or session log,
which grows to hundreds of megabytes and is read only at its end.

Standard library only: `rewake hook claude` reads a transcript through this on every limit,
and a hook must start fast.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any


class NotARegularFile(OSError):
    """The path names a FIFO, a device or a folder: nothing is read from it."""


def tail_objects(path: str | Path, max_bytes: int, *, follow: bool = True) -> list[dict[str, Any]]:
    """The JSON-object rows of the file's last `max_bytes`, oldest first; a first line cut by
    the seek, blank lines and lines that are not JSON objects are left out. Opened without
    blocking (a FIFO returns at once and is refused: NotARegularFile); `follow=False` refuses
    a last part that is a symlink. OSError when the file cannot be read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        size = os.lseek(fd, 0, os.SEEK_END)
        start = max(0, size - max_bytes)
        chunk = os.pread(fd, max_bytes, start)
    finally:
        os.close(fd)
    lines = chunk.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut by the seek
    rows: list[dict[str, Any]] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a line that is not JSON (or a file that is no JSON-lines file) gives none
        if isinstance(row, dict):
            rows.append(row)
    return rows
