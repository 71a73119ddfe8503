"""Reading a server's HTTP/1.1 answers off a raw socket, for tests that write requests byte by
byte."""

from __future__ import annotations

from typing import IO, NamedTuple


class Answer(NamedTuple):
    """One answer: its status line, the length its head declared, and the body read."""

    status: bytes
    length: int
    body: bytes


def read_answer(reader: IO[bytes]) -> Answer:
    """The next answer from a socket's file (`sock.makefile("rb")`): the head up to its blank
    line, then as much body as its content-length says (less only if the connection ends)."""
    status = reader.readline()
    length = 0
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return Answer(status, length, reader.read(length))
