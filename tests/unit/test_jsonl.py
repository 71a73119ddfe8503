"""rewake.jsonl: the end of a JSON-lines file, read without blocking and without trusting it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rewake.jsonl import NotARegularFile, tail_objects


def test_the_last_bytes_give_whole_object_rows_only(tmp_path: Path) -> None:
    """Only the file's last max_bytes are read: the line the seek cut is dropped, and blank
    lines, lines that are not JSON and JSON that is not an object are left out."""
    path = tmp_path / "t.jsonl"
    rows = [{"n": i, "pad": "x" * 40} for i in range(50)]
    text = "\n".join(json.dumps(r) for r in rows) + "\n\nnot json\n[1, 2]\n" + '{"n": "last"}\n'
    path.write_text(text)
    got = tail_objects(path, 300)
    assert got[-1] == {"n": "last"}
    assert [r["n"] for r in got[:-1]] == list(range(50 - len(got) + 1, 50))
    assert all(isinstance(r, dict) for r in got) and 1 < len(got) < 10


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO (no writer) is opened without blocking and refused as not a regular file."""
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFile):
        tail_objects(fifo, 1024)


def test_a_symlink_is_refused_when_not_followed(tmp_path: Path) -> None:
    """follow=False refuses a last part that is a symlink; follow=True reads its target."""
    target = tmp_path / "real.jsonl"
    target.write_text('{"a": 1}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert tail_objects(link, 1024) == [{"a": 1}]
    with pytest.raises(OSError):
        tail_objects(link, 1024, follow=False)


def test_a_missing_file_is_an_oserror(tmp_path: Path) -> None:
    """No file: OSError, for the caller to say why."""
    with pytest.raises(FileNotFoundError):
        tail_objects(tmp_path / "none.jsonl", 1024)
