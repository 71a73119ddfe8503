"""The load generator of bench/api_bench.py, and what it sends.

A bare HTTP/1.1 client on asyncio streams, in a process of its own, pinned to its own CPU
(`taskset`) when there are two or more, so that it never competes with the server for a core.
It sends a fixed number of requests over a fixed number of keep-alive connections and reports
a `Burst`: how long it took, p50 and p99, the errors, and how many PUTs armed a mark.

Why not httpx: on the 2-core machine of 2026-12-02 an httpx client spent about 1.4 ms of its
own CPU on a request, so it could not send more than about 700 `GET /healthz` a second (the
server answered 3,700 to this client), and its own queueing and collections added 3-5 ms to
the write routes' p99. A load generator must cost far less than what it measures.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

TOKEN = "bench-secret-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def failure_body(now: datetime) -> dict[str, object]:
    """A Claude session limit seen a minute ago that resets in two hours: a report that can be
    armed (the reset is stated, in the future, and not stale)."""
    berlin = ZoneInfo("Europe/Berlin")
    observed = (now - timedelta(minutes=1)).astimezone(berlin).replace(microsecond=0)
    reset = observed + timedelta(hours=2)
    clock = f"{(reset.hour - 1) % 12 + 1}:{reset.minute:02d}{'am' if reset.hour < 12 else 'pm'}"
    return {
        "attempt": 1,
        "message": f"You've hit your session limit · resets {clock} (Europe/Berlin)",
        "observed_at": observed.isoformat(),
        "zone": "Europe/Berlin",
    }


ARM_BODY = {"enabled": True}
HEALTHZ, FAILURES, AUTO_RESUME = "GET /healthz", "POST .../failures", "PUT .../auto-resume"


@dataclass
class Burst:
    """One route sent a fixed number of requests: what the generator saw."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    #: PUT auto-resume answers whose mark is armed (0 for the other routes).
    armed: int = 0
    #: How many errors of each kind: an HTTP status, or the client's exception name.
    error_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


# -- placement on CPUs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Which CPUs the server and the load generator run on (no pinning on one CPU)."""

    server: str | None
    generator: str | None

    @classmethod
    def split(cls) -> Placement:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2 or shutil.which("taskset") is None:
            return cls(None, None)
        return cls(",".join(map(str, cpus[:-1])), str(cpus[-1]))

    def describe(self) -> str:
        if self.server is None:
            return "not pinned (one CPU, or no taskset)"
        return f"server on CPU {self.server}, load generator on CPU {self.generator}"


def pinned(command: list[str], cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus, *command] if cpus is not None else command


# -- the burst, in a process of its own -------------------------------------------------------


def request_bytes(method: str, path: str, body: object | None = None) -> bytes:
    """One HTTP/1.1 request, with the bench's bearer token, ready to write."""
    data = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        f"authorization: {AUTH['Authorization']}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


def requests_for(route: str, roots: list[str], now: datetime) -> list[bytes]:
    """The burst's requests: one per root (for /healthz, one per entry)."""
    if route == HEALTHZ:
        return [request_bytes("GET", "/healthz") for _ in roots]
    if route == FAILURES:
        body = failure_body(now)
        return [
            request_bytes("POST", f"/api/agent/runs/{root}/runs/r1/failures", body)
            for root in roots
        ]
    return [request_bytes("PUT", f"/api/agent/runs/{root}/auto-resume", ARM_BODY) for root in roots]


class ResponseError(Exception):
    """An answer this client cannot read (no content-length, or a broken status line)."""


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The status and body of one response (the server answers with a content-length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError) as error:
        raise ResponseError(lines[0][:80].decode(errors="replace")) from error
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ResponseError("no content-length")
    return status, await reader.readexactly(length)


async def burst(url: str, route: str, roots: list[str], connections: int,
                timeout_s: float = 60) -> Burst:  # fmt: skip
    """Every request of the route, `connections` at a time, each connection keeping alive."""
    host, _, port = url.removeprefix("http://").partition(":")
    todo = iter(requests_for(route, roots, datetime.now(UTC)))
    latencies: list[float] = []
    errors = armed = 0
    kinds: Counter[str] = Counter()

    async def connection() -> None:
        nonlocal errors, armed
        reader = writer = None
        for request in todo:  # one shared iterator: each request is sent once
            began = time.perf_counter()
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, int(port))
                assert reader is not None
                writer.write(request)
                status, body = await asyncio.wait_for(read_response(reader), timeout_s)
            # A timeout is an OSError, a connection closed mid-answer an EOFError.
            except (OSError, EOFError, asyncio.LimitOverrunError, ResponseError) as error:
                errors += 1
                kinds[type(error).__name__] += 1
                if writer is not None:
                    writer.close()
                reader = writer = None  # a new connection for the next request
                continue
            finally:
                latencies.append(time.perf_counter() - began)
            if status >= 400:
                errors += 1
                kinds[str(status)] += 1
            elif route == AUTO_RESUME and json.loads(body).get("state") == "armed":
                armed += 1
        if writer is not None:
            writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    elapsed = time.perf_counter() - began
    ordered = sorted(latencies) or [0.0]

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return Burst(len(latencies), elapsed, quantile(0.5), quantile(0.99), errors, armed, dict(kinds))


def run_burst(url: str, route: str, roots: list[str], connections: int, cpus: str | None,
              directory: str) -> Burst:  # fmt: skip
    """`burst` in a process of its own (on `cpus`); the roots go through a file."""
    roots_file = Path(directory) / "roots.txt"
    roots_file.write_text("\n".join(roots))
    spec = json.dumps({"url": url, "route": route, "roots_file": str(roots_file),
                       "connections": connections})  # fmt: skip
    command = [sys.executable, __file__, spec]
    out = subprocess.run(pinned(command, cpus), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the load generator failed:\n{out.stderr}")
    return Burst(**json.loads(out.stdout))


def client_main(spec_json: str) -> int:
    """The generator's own process: send one burst, print its Burst as JSON."""
    spec = json.loads(spec_json)
    roots = Path(spec["roots_file"]).read_text().split("\n")
    result = asyncio.run(burst(spec["url"], spec["route"], roots, spec["connections"]))
    print(json.dumps(result.__dict__))
    return 0


if __name__ == "__main__":  # the generator's own process
    sys.exit(client_main(sys.argv[1]))
