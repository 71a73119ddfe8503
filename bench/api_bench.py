"""A burst of failure reports, then a burst of PUT auto-resume, against a real `rewake serve`.

    python bench/api_bench.py [--requests 5000] [--connections 16]

A real `rewake serve` process on loopback (it migrates the schema), on SQLite and, when
REWAKE_TEST_POSTGRES_URL is set, on PostgreSQL in a schema of its own. Over 16 connections
the load generator sends 5,000 failure reports, each for a new session, then 5,000 PUT
auto-resume, one for each of those sessions; then as many `GET /healthz`, printed beside them
for scale (no goal is set on a ratio to it). Beside each burst's latencies: the server's CPU
time per request (Linux), which says what a route costs whatever the machine's queueing, and
the floor that cost alone puts under each write burst's latency. Where the server has one core
(a 2-CPU machine), it answers at most one request per CPU time per request, so with every
connection busy a request waits on average at least connections x that (Little's law); with
more cores the floor is rough (Python runs one thread at a time, SQLite beside it). A floor
near the goal says that the route's CPU cost on this machine, not queueing in the server,
stands between p99 and its goal.

Goals: no request answered with an error; every PUT arms a mark (its answer says `armed`, and
/metrics counts as many armed marks); the p99 of each write burst under 50 ms on SQLite and
under 100 ms on PostgreSQL.

The load generator is a bare HTTP/1.1 client on asyncio streams, in a process of its own, so
that it costs far less than what it measures (bench/load_generators.py says why not httpx).
With two or more CPUs the server is pinned to all but the last CPU and the generator to the
last one (`taskset`), so that they never compete for a core; the database server, when there
is one, is not pinned.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from load_generators import (
    AUTH,
    AUTO_RESUME,
    FAILURES,
    HEALTHZ,
    TOKEN,
    Burst,
    Placement,
    pinned,
    run_burst,
)

ROOT = Path(__file__).resolve().parent.parent
#: The p99 goal of each write burst, in milliseconds, by database.
P99_GOAL_MS = {"SQLite": 50.0, "PostgreSQL": 100.0}


# -- the server -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_up(url: str, process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=max(1.0, timeout_s / 60)).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("rewake serve did not start")
        time.sleep(0.1)


@dataclass(frozen=True)
class Server:
    """A running `rewake serve`: its address and its process id."""

    url: str
    pid: int


def cpu_seconds(pid: int) -> float | None:
    """The CPU time a process has used so far (user and system), or None where /proc does not
    say (not Linux). Per request, it tells what a route costs the server whatever the queue."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # Fields 14 and 15 of proc(5), counted after the command name: utime and stime, in ticks.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server(database_url: str, cpus: str | None, *, under: Sequence[str] = (),
           patience_s: float = 30) -> Iterator[Server]:  # fmt: skip
    """`rewake serve` in its own process (it migrates the schema), until it answers; run
    `under` a tool (valgrind) when given, with `patience_s` to start and to stop."""
    port = free_port()
    env = os.environ | {
        "REWAKE_DATABASE_URL": database_url,
        "REWAKE_API_TOKENS": f"bench:{TOKEN}",
        "REWAKE_LOG_LEVEL": "WARNING",
    }
    # The API alone: no sweeper in the process, so that every armed mark stays armed.
    serve = [sys.executable, "-m", "rewake", "serve", "--port", str(port), "--no-sweeper"]
    process = subprocess.Popen(pinned([*under, *serve], cpus), cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, timeout_s=patience_s)
        yield Server(url, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=patience_s)


@contextmanager
def fresh_schema(base: str) -> Iterator[str]:
    """A new PostgreSQL schema for this run (dropped afterwards); `serve` migrates it."""
    import sqlalchemy

    schema = f"rewake_bench_{uuid.uuid4().hex[:8]}"
    admin = sqlalchemy.create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


def marks_armed(url: str) -> int:
    """How many marks are armed now, from the server's /metrics."""
    import httpx

    metrics = httpx.get(f"{url}/metrics", headers=AUTH, timeout=30).text
    for line in metrics.splitlines():
        if line.startswith('rewake_marks{state="armed"}'):
            return int(float(line.split()[-1]))
    return 0


# -- a run ------------------------------------------------------------------------------------


@dataclass
class Run:
    """One database's bursts, and the armed marks /metrics counted after them."""

    name: str
    bursts: dict[str, Burst]
    #: The server's CPU time per request of each burst, in milliseconds (None: not known).
    cpu_ms: dict[str, float | None]
    marks_armed: int


def run(name: str, database_url: str, requests: int, connections: int, placement: Placement,
        directory: str) -> Run:  # fmt: skip
    """The failure burst, then the auto-resume burst on the sessions it created, then /healthz."""
    roots = [f"bench-{uuid.uuid4().hex[:8]}-{n}" for n in range(requests)]
    bursts: dict[str, Burst] = {}
    cpu_ms: dict[str, float | None] = {}
    with server(database_url, placement.server) as serving:
        for route in (FAILURES, AUTO_RESUME, HEALTHZ):
            before = cpu_seconds(serving.pid)
            bursts[route] = run_burst(serving.url, route, roots, connections,
                                      placement.generator, directory)  # fmt: skip
            after = cpu_seconds(serving.pid)
            cpu_ms[route] = (
                None if before is None or after is None else (after - before) * 1000 / requests
            )
        armed = marks_armed(serving.url)
    return Run(name, bursts, cpu_ms, armed)


def report(result: Run, connections: int, placement: Placement) -> list[tuple[str, bool]]:
    """Print the run's figures; its goals, each with whether it was met."""
    print(f"\n{result.name}: {connections} connections; {placement.describe()}")
    print(f"  {'route':<22}{'requests':>9}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
          f"{'CPU ms/req':>12}")  # fmt: skip
    for route, burst in result.bursts.items():
        cpu = result.cpu_ms[route]
        cpu_text = "?" if cpu is None else f"{cpu:.2f}"
        print(f"  {route:<22}{burst.requests:>9}{burst.rps:>9.0f}{burst.p50_ms:>9.1f}"
              f"{burst.p99_ms:>9.1f}{burst.errors:>8}{cpu_text:>12}")  # fmt: skip
    for route, burst in result.bursts.items():
        if burst.error_kinds:
            print(f"  {route} errors by kind: {burst.error_kinds}")
    puts = result.bursts[AUTO_RESUME]
    print(f"  PUTs answered armed: {puts.armed} of {puts.requests}; "
          f"armed marks in /metrics: {result.marks_armed}")  # fmt: skip
    floors = [f"{route} {connections * cpu:.1f} ms" for route in (FAILURES, AUTO_RESUME)
              if (cpu := result.cpu_ms[route]) is not None]  # fmt: skip
    if floors:
        print(f"  floor on the mean ({connections} connections x CPU ms/req): {', '.join(floors)}")
    goal = P99_GOAL_MS[result.name]
    writes = [result.bursts[FAILURES], puts]
    return [
        (f"{result.name}: 0 errors", sum(burst.errors for burst in writes) == 0),
        (f"{result.name}: every PUT arms a mark",
         puts.armed == puts.requests == result.marks_armed),
        (f"{result.name}: p99 of each write burst < {goal:g} ms",
         max(burst.p99_ms for burst in writes) < goal),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="per burst")
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args(argv)
    placement = Placement.split()
    goals: list[tuple[str, bool]] = []
    with tempfile.TemporaryDirectory() as directory:
        sqlite = run("SQLite", f"sqlite:///{directory}/bench.db", args.requests,
                     args.connections, placement, directory)  # fmt: skip
        goals += report(sqlite, args.connections, placement)
        postgres = os.environ.get("REWAKE_TEST_POSTGRES_URL")
        if postgres:
            with fresh_schema(postgres) as url:
                pg = run("PostgreSQL", url, args.requests, args.connections, placement,
                         directory)  # fmt: skip
            goals += report(pg, args.connections, placement)
        else:
            print("\nPostgreSQL: skipped (REWAKE_TEST_POSTGRES_URL is not set)")
    print()
    for goal, met in goals:
        print(f"  {'met ' if met else 'MISSED'} {goal}")
    return 0 if all(met for _, met in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
