"""What one request of each route costs a real `rewake serve`, counted in instructions.

    python bench/api_instructions.py [--requests 100]

Timings on a shared machine wander from run to run (the same code a third faster or slower),
so a change of a few percent in what a request costs cannot be seen in them. An instruction
count can: the server runs under valgrind's callgrind (`apt-get install valgrind`), on SQLite,
and its counters are zeroed before and read after each burst of the load generator (a few
connections, each request its own new session as in bench/api_bench.py). The figure is the
server's own user-space work per request (Python, SQLAlchemy, SQLite); time in the kernel
(sockets, the disk) is not counted. Two runs of the same code agree to half a percent on the
write routes and a few percent on /healthz. About five minutes: everything runs some fifty
times slower under callgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from api_bench import server
from load_generators import AUTO_RESUME, FAILURES, HEALTHZ, burst

#: Requests sent before counting, so that one-time work (imports, compiling statements) is
#: not counted.
WARM_UP = 20


def counted(pid: int, dump_dir: Path, route: str) -> int:
    """Dump the server's counters and return the instructions counted since the last zeroing."""
    before = set(dump_dir.glob("callgrind.out*"))
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True, capture_output=True)
    (dump,) = set(dump_dir.glob("callgrind.out*")) - before
    found = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no instruction count in the dump after {route}")
    return int(found.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=100, help="counted per route")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as directory:
        dumps = Path(directory)
        # `rewake serve` re-executes itself to take its secrets out of its environment
        # (rewake.secret_env): callgrind must follow it into the new image.
        callgrind = ["valgrind", "--tool=callgrind", "--trace-children=yes",
                     f"--log-file={dumps}/valgrind.log",
                     f"--callgrind-out-file={dumps}/callgrind.out"]  # fmt: skip
        database = f"sqlite:///{directory}/bench.db"
        with server(database, None, under=callgrind, patience_s=600) as serving:
            routes = (FAILURES, AUTO_RESUME, HEALTHZ)
            warm = [f"warm-{uuid.uuid4().hex[:8]}-{n}" for n in range(WARM_UP)]
            for route in routes:
                asyncio.run(burst(serving.url, route, warm, 4, timeout_s=600))
            roots = [f"count-{uuid.uuid4().hex[:8]}-{n}" for n in range(args.requests)]
            print(f"rewake serve on SQLite under callgrind, {args.requests} requests a route")
            print(f"  {'route':<22}{'instructions per request':>26}")
            for route in routes:
                zero = ["callgrind_control", "--zero", str(serving.pid)]
                subprocess.run(zero, check=True, capture_output=True)
                sent = asyncio.run(burst(serving.url, route, roots, 4, timeout_s=600))
                if sent.errors:
                    print(f"  {route}: errors {sent.error_kinds}", file=sys.stderr)
                    return 1
                count = counted(serving.pid, dumps, route)
                print(f"  {route:<22}{count / args.requests / 1e6:>24.3f} M")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
