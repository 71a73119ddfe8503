"""The load generator of bench/api_bench.py, and what it sends.

An httpx client in a process of its own, pinned to its own CPU (`taskset`) when there are two
or more, so that it never competes with the server for a core. It sends a fixed number of
requests over a fixed number of connections and reports a `Burst`: how long it took, p50 and
p99, the errors, and how many PUTs armed a mark.
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


async def burst(url: str, route: str, roots: list[str], connections: int) -> Burst:
    """One request per root in `roots` (for /healthz, one per entry), `connections` at a time."""
    import httpx

    body = failure_body(datetime.now(UTC))
    latencies: list[float] = []
    errors = armed = 0
    kinds: Counter[str] = Counter()
    todo = iter(roots)
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)

    async def send(client: httpx.AsyncClient, root: str) -> httpx.Response:
        if route == HEALTHZ:
            return await client.get("/healthz")
        if route == FAILURES:
            return await client.post(f"/api/agent/runs/{root}/runs/r1/failures", json=body)
        return await client.put(f"/api/agent/runs/{root}/auto-resume", json=ARM_BODY)

    async with httpx.AsyncClient(base_url=url, limits=limits, headers=AUTH, timeout=60) as client:

        async def connection() -> None:
            nonlocal errors, armed
            for root in todo:  # one shared iterator: each root is sent once
                began = time.perf_counter()
                try:
                    answer = await send(client, root)
                except httpx.HTTPError as error:  # a timeout or a dropped connection, too
                    errors += 1
                    kinds[type(error).__name__] += 1
                    continue
                finally:
                    latencies.append(time.perf_counter() - began)
                if answer.status_code >= 400:
                    errors += 1
                    kinds[str(answer.status_code)] += 1
                elif route == AUTO_RESUME and answer.json().get("state") == "armed":
                    armed += 1

        began = time.perf_counter()
        await asyncio.gather(*(connection() for _ in range(connections)))
        elapsed = time.perf_counter() - began
    ordered = sorted(latencies) or [0.0]

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return Burst(
        len(latencies), elapsed, quantile(0.5), quantile(0.99), errors, armed, dict(kinds)
    )


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
