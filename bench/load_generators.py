"""The load generators of bench/api_bench.py, and what they send.

`wrk` (C, a few microseconds a request) when it is installed, else an httpx client in a
process of its own; either pinned to its own CPU (`taskset`), so that it never competes with
the server for a core. Each reports a `Round`: requests, seconds, p50 and p99, errors, and how
many requests each of its threads or workers built (the root_ids it used follow from those).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
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


FAILURE_BODY = failure_body(datetime.now(UTC))
ARM_BODY = {"enabled": True}
HEALTHZ, FAILURES, AUTO_RESUME = "GET /healthz", "POST .../failures", "PUT .../auto-resume"


@dataclass
class Round:
    """One route measured once: what the generator saw."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    #: How many requests each generator thread (wrk) or worker (httpx) built, numbered from 1.
    made: list[int] = field(default_factory=list)
    #: The number of the first request that was sent: wrk builds one request per thread
    #: before it starts and never sends it (wrk 4.1).
    first_sent: int = 1

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


# -- what each route is sent ------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """One route's requests: for failures, the prefix of the new root_ids (`<prefix>-<thread or
    worker>-<n>`); for auto-resume, a file of root_ids to arm, one a line."""

    route: str
    prefix: str = ""
    pool_file: str = ""


# -- wrk --------------------------------------------------------------------------------------

_WRK_COMMON = """
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end
function done(summary, latency, requests)
  local made = {}
  for i, thread in ipairs(threads) do made[i] = tostring(thread:get("counter")) end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, '
    .. '"errors": %d, "made": [%s]}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status + e.connect + e.read + e.write + e.timeout, table.concat(made, ", ")))
end
counter = 0
"""

_WRK_HEALTHZ = """
request = function()
  counter = counter + 1
  return wrk.format("GET", "/healthz")
end
"""

_WRK_FAILURES = """
local headers = {["Content-Type"] = "application/json", ["Authorization"] = [==[%(auth)s]==]}
local body = [==[%(body)s]==]
local prefix = [==[%(prefix)s]==]
request = function()
  counter = counter + 1
  local path = "/api/agent/runs/" .. prefix .. "-" .. tid .. "-" .. counter .. "/runs/r1/failures"
  return wrk.format("POST", path, headers, body)
end
"""

_WRK_AUTO_RESUME = """
local headers = {["Content-Type"] = "application/json", ["Authorization"] = [==[%(auth)s]==]}
local body = [==[%(body)s]==]
local roots = nil
request = function()
  if roots == nil then  -- this thread's share: every nthreads-th line from its own offset
    roots = {}
    local line_no = 0
    for line in io.lines([==[%(pool)s]==]) do
      if line_no %% %(threads)d == tid - 1 then table.insert(roots, line) end
      line_no = line_no + 1
    end
  end
  counter = counter + 1
  -- Past the end the roots come round again: a repeat arms nothing (reported as overrun).
  local root = roots[((counter - 1) %% math.max(#roots, 1)) + 1] or "none"
  return wrk.format("PUT", "/api/agent/runs/" .. root .. "/auto-resume", headers, body)
end
"""


def wrk_script(load: Load, directory: str, threads: int) -> str:
    values = {
        "auth": AUTH["Authorization"],
        "prefix": load.prefix,
        "pool": load.pool_file,
        "threads": threads,
    }
    if load.route == HEALTHZ:
        body = _WRK_HEALTHZ
    elif load.route == FAILURES:
        body = _WRK_FAILURES % (values | {"body": json.dumps(FAILURE_BODY)})
    else:
        body = _WRK_AUTO_RESUME % (values | {"body": json.dumps(ARM_BODY)})
    path = Path(directory) / f"load-{uuid.uuid4().hex[:6]}.lua"
    path.write_text(_WRK_COMMON + body)
    return str(path)


def run_wrk(url: str, load: Load, seconds: float, connections: int, cpus: str | None,
            directory: str) -> Round:  # fmt: skip
    threads = 1  # one core for the generator: one event loop is enough for it
    script = wrk_script(load, directory, threads)
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s",
               "-s", script, url + "/"]  # fmt: skip
    out = subprocess.run(pinned(command, cpus), capture_output=True, text=True, check=True)
    line = next(line for line in out.stdout.splitlines() if line.startswith("BENCH "))
    data = json.loads(line.removeprefix("BENCH "))
    return Round(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        errors=data["errors"],
        made=[int(n) for n in data["made"]],
        first_sent=2,
    )


# -- httpx, in a process of its own ----------------------------------------------------------


async def httpx_load(url: str, load: Load, seconds: float, workers: int) -> Round:
    import httpx

    latencies: list[float] = []
    errors = 0
    made = [0] * workers
    pool: Iterator[str] = iter(())
    if load.route == AUTO_RESUME:
        pool = iter(Path(load.pool_file).read_text().split())
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)

    async def send(client: httpx.AsyncClient, worker: int) -> httpx.Response:
        made[worker] += 1
        if load.route == HEALTHZ:
            return await client.get("/healthz")
        if load.route == FAILURES:
            root = f"{load.prefix}-{worker + 1}-{made[worker]}"
            return await client.post(f"/api/agent/runs/{root}/runs/r1/failures", json=FAILURE_BODY)
        root = next(pool, "none")  # past the end: reported as overrun
        return await client.put(f"/api/agent/runs/{root}/auto-resume", json=ARM_BODY)

    async with httpx.AsyncClient(base_url=url, limits=limits, headers=AUTH) as client:
        stop = time.perf_counter() + seconds

        async def worker(number: int) -> None:
            nonlocal errors
            while time.perf_counter() < stop:
                began = time.perf_counter()
                answer = await send(client, number)
                latencies.append(time.perf_counter() - began)
                errors += answer.status_code >= 400

        began = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(workers)))
        elapsed = time.perf_counter() - began
    ordered = sorted(latencies) or [0.0]

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return Round(len(latencies), elapsed, quantile(0.5), quantile(0.99), errors, made)


def run_httpx(url: str, load: Load, seconds: float, connections: int, cpus: str | None,
              _directory: str) -> Round:  # fmt: skip
    spec = json.dumps({"url": url, "load": load.__dict__, "seconds": seconds,
                       "workers": connections})  # fmt: skip
    command = [sys.executable, __file__, spec]
    out = subprocess.run(pinned(command, cpus), capture_output=True, text=True, check=True)
    return Round(**json.loads(out.stdout))


def client_main(spec_json: str) -> int:
    """The httpx generator's own process: run one load, print its Round as JSON."""
    spec = json.loads(spec_json)
    result = asyncio.run(
        httpx_load(spec["url"], Load(**spec["load"]), spec["seconds"], spec["workers"])
    )
    print(json.dumps(result.__dict__))
    return 0


if __name__ == "__main__":  # the httpx generator's own process
    sys.exit(client_main(sys.argv[1]))
