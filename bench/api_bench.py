"""Throughput and latency of the API's write routes beside a trivial route of the same app.

A real `rewake serve` process on loopback, 16 concurrent connections from httpx (async):
requests per second and p50/p99 of `GET /healthz` (the baseline), `POST .../failures` and
`PUT .../auto-resume`, on SQLite and, when REWAKE_TEST_POSTGRES_URL is set, on PostgreSQL.
Prints each route's ratio to the baseline measured in the same run.

    python bench/api_bench.py [--seconds 6] [--rounds 3] [--concurrency 16]

Goals: failure intake at least 40 % of the baseline's throughput; p99 under 50 ms on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-secret-0123456789"
MESSAGE = "You've hit your session limit · resets 5:40pm (Europe/Berlin)"


@dataclass
class Result:
    route: str
    requests: int
    seconds: float
    latencies: list[float]
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(database_url: str) -> Iterator[str]:
    """`rewake serve` in its own process (it migrates the schema), until it answers."""
    port = free_port()
    env = os.environ | {
        "REWAKE_DATABASE_URL": database_url,
        "REWAKE_API_TOKENS": f"bench:{TOKEN}",
        "REWAKE_LOG_LEVEL": "WARNING",
    }
    process = subprocess.Popen(
        # The API alone: no sweeper in the process (the baseline route shares it all the same).
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--no-sweeper"],
        cwd=ROOT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("rewake serve did not start")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


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


Request = Callable[[httpx.AsyncClient, int, int], Awaitable[httpx.Response]]


async def measure(url: str, route: str, request: Request, seconds: float, workers: int) -> Result:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, limits=limits, headers=headers) as client:
        await request(client, 0, 0)  # warm the connection and the route before timing
        stop = time.perf_counter() + seconds

        async def worker(number: int) -> None:
            nonlocal errors
            sequence = 0
            while time.perf_counter() < stop:
                sequence += 1
                began = time.perf_counter()
                answer = await request(client, number, sequence)
                latencies.append(time.perf_counter() - began)
                errors += answer.status_code >= 400

        began = time.perf_counter()
        await asyncio.gather(*(worker(n + 1) for n in range(workers)))
        elapsed = time.perf_counter() - began
    return Result(route, len(latencies), elapsed, latencies, errors)


def routes(run: str) -> dict[str, Request]:
    def root(worker: int) -> str:
        return f"bench-{run}-{worker}"

    async def healthz(client: httpx.AsyncClient, _worker: int, _sequence: int) -> httpx.Response:
        return await client.get("/healthz")

    async def failures(client: httpx.AsyncClient, worker: int, sequence: int) -> httpx.Response:
        # One session per worker, one attempt per request: each report is new and newer.
        body = {
            "attempt": sequence,
            "message": MESSAGE,
            "observed_at": "2026-11-30T14:05:00+01:00",
            "zone": "Europe/Berlin",
        }
        return await client.post(f"/api/agent/runs/{root(worker)}/runs/r1/failures", json=body)

    async def auto_resume(client: httpx.AsyncClient, worker: int, sequence: int) -> httpx.Response:
        # Alternate on and off, so that every request writes (a mark armed, or cleared).
        body = {"enabled": sequence % 2 == 1}
        return await client.put(f"/api/agent/runs/{root(worker)}/auto-resume", json=body)

    return {
        "GET /healthz": healthz,
        "POST .../failures": failures,
        "PUT .../auto-resume": auto_resume,
    }


def run(name: str, database_url: str, seconds: float, workers: int, rounds: int) -> list[Result]:
    """Each route for `seconds`, in `rounds` interleaved slices, so that drift in the machine's
    load falls on every route alike."""
    totals: dict[str, Result] = {}
    with server(database_url) as url:
        requests = routes(uuid.uuid4().hex[:8])
        for _ in range(rounds):
            for route, request in requests.items():
                part = asyncio.run(measure(url, route, request, seconds / rounds, workers))
                total = totals.setdefault(route, Result(route, 0, 0.0, [], 0))
                total.requests += part.requests
                total.seconds += part.seconds
                total.latencies += part.latencies
                total.errors += part.errors
    results = list(totals.values())
    baseline = results[0].rps
    print(f"\n{name}: {workers} connections, {seconds:g} s per route in {rounds} rounds")
    print(f"  {'route':<22}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}{'ratio':>8}")
    for result in results:
        print(
            f"  {result.route:<22}{result.rps:>9.0f}{result.quantile(0.5):>9.1f}"
            f"{result.quantile(0.99):>9.1f}{result.errors:>8}{result.rps / baseline:>8.2f}"
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    verdicts = []
    with tempfile.TemporaryDirectory() as directory:
        sqlite = run(
            "SQLite", f"sqlite:///{directory}/bench.db", args.seconds, args.concurrency, args.rounds
        )
        healthz, failures = sqlite[0], sqlite[1]
        verdicts.append(
            ("SQLite failure intake >= 40 % of /healthz", failures.rps >= 0.4 * healthz.rps)
        )
        verdicts.append(("SQLite p99 of every write route < 50 ms",
                         all(r.quantile(0.99) < 50 for r in sqlite[1:])))  # fmt: skip
    postgres = os.environ.get("REWAKE_TEST_POSTGRES_URL")
    if postgres:
        with fresh_schema(postgres) as url:
            pg = run("PostgreSQL", url, args.seconds, args.concurrency, args.rounds)
        verdicts.append(
            ("PostgreSQL failure intake >= 40 % of /healthz", pg[1].rps >= 0.4 * pg[0].rps)
        )
    else:
        print("\nPostgreSQL: skipped (REWAKE_TEST_POSTGRES_URL is not set)")
    print()
    for goal, met in verdicts:
        print(f"  {'met ' if met else 'MISSED'} {goal}")
    return 0 if all(met for _, met in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
