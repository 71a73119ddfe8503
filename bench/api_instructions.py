"""CPU instructions a request costs `rewake serve`: `POST .../failures` beside `GET /healthz`.

Instruction counts do not move with the machine's load, as requests a second do on a shared
machine: this is the repeatable view of what `api_bench.py` measures in seconds. The server
runs under valgrind's callgrind on a new SQLite file (or, with --postgres, a new schema of
that PostgreSQL database), is sent a warm-up and then N requests over
16 keep-alive connections, and stops; the same is done with more requests, and the
difference divided by the difference in requests is the cost of one request, start-up and
warm-up cancelled out. Every failure POST is a new report (a new root_id).

    python bench/api_instructions.py [--requests 16 320] [--postgres URL]    # needs valgrind

On PostgreSQL only the API process is counted: not the database server, and not the time
the kernel spends on each round trip to it (callgrind counts user-space instructions), which
`api_bench.py`'s seconds include.

The ratio printed is /healthz's cost over a report's: what the throughput ratio would be if
every instruction took as long. It is not the goal's measure (api_bench.py is), which counts
seconds; the two differ by a few points (docs: README "Throughput").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path

from api_bench import free_port, fresh_schema, wait_until_up
from load_generators import FAILURE_BODY, TOKEN

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 16
WARMUP = 160


def _request(route: str, tag: str, connection: int, number: int) -> bytes:
    if route == "healthz":
        return b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    body = json.dumps(FAILURE_BODY).encode()
    head = (
        f"POST /api/agent/runs/{tag}-{connection}-{number}/runs/r1/failures HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _send(port: int, route: str, requests: int) -> None:
    """`requests` requests over CONNECTIONS keep-alive connections; each answer must be 2xx."""
    tag = uuid.uuid4().hex[:8]

    async def connection(index: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for number in range(requests // CONNECTIONS):
            writer.write(_request(route, tag, index, number))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.split(b" ")[1].startswith(b"2"):
                raise RuntimeError(head.decode("latin-1"))
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            await reader.readexactly(int(length[1]) if length else 0)
        writer.close()

    await asyncio.gather(*(connection(index) for index in range(CONNECTIONS)))


def instructions_served(route: str, requests: int, postgres: str | None) -> int:
    """Instructions `rewake serve` ran to start, take WARMUP + `requests` requests, and stop:
    on a new SQLite file, or on a new schema of the PostgreSQL database `postgres`."""
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        database = f"sqlite:///{directory}/bench.db"
        if postgres:
            database = stack.enter_context(fresh_schema(postgres))
        port = free_port()
        env = os.environ | {
            "REWAKE_DATABASE_URL": database,
            "REWAKE_API_TOKENS": f"bench:{TOKEN}",
            "REWAKE_LOG_LEVEL": "WARNING",
        }
        log = Path(directory) / "callgrind.log"
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                   f"--log-file={log}", sys.executable, "-m", "app.cli", "serve",
                   "--port", str(port), "--no-sweeper"]  # fmt: skip
        server = subprocess.Popen(command, cwd=ROOT, env=env)
        try:
            # valgrind runs the interpreter some fifty times slower: minutes, not seconds
            wait_until_up(f"http://127.0.0.1:{port}", server, timeout_s=300)
            asyncio.run(_send(port, route, WARMUP))
            asyncio.run(_send(port, route, requests))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=300)
        found = re.search(r"Collected : (\d+)", log.read_text())
        if found is None:
            raise RuntimeError(f"no instruction count in {log}")
        return int(found[1])


def per_request(route: str, fewer: int, more: int, postgres: str | None) -> float:
    more_served = instructions_served(route, more, postgres)
    return (more_served - instructions_served(route, fewer, postgres)) / (more - fewer)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, nargs=2, default=(16, 320), metavar=("N1", "N2"))
    parser.add_argument(
        "--postgres", metavar="URL", default=None,
        help="measure on a new schema of this PostgreSQL database instead of a SQLite file",
    )  # fmt: skip
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    fewer, more = args.requests
    healthz = per_request("healthz", fewer, more * 4, args.postgres)
    failures = per_request("failures", fewer, more, args.postgres)
    print("PostgreSQL" if args.postgres else "SQLite")
    print(f"GET /healthz         {healthz / 1e6:6.2f} M instructions a request")
    print(f"POST .../failures    {failures / 1e6:6.2f} M instructions a request")
    print(f"ratio                {healthz / failures:6.2f} (api_bench.py's goal, in seconds: 0.40)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
