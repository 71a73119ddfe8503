"""The host drills: a `rewake sweep` process against a slow-but-healthy host, a host that
drips its answers, and a slow lookup route, over loopback; each prints its figures.

    python bench/host_drills.py [--database-url URL] [--drill slow-host|drip|slow-lookup|huge]

The defaults are the audit's settings: 64 marks due at once against a host taking 6 s a
resume, with a timeout of 8 s, a lease of 13 s and the lookup on (then without the lookup:
4 s, 5 s, 10 s); 16 sends answered 200 and then a byte every 2 s for 60 s, with a 3 s
timeout, ahead of 5 other due marks; 20 uncertain marks and a lookup route taking 2.9 s; a
200 MiB answer. Must print 0 resumes lost and 0 wrongly uncertain, the other marks within
the deadlines ahead of them, the dead sweeper's mark re-armed within a sweep interval, and
the huge answer read only in part. The test suite runs short forms
(tests/e2e/test_sweeper_host_drills.py, tests/integration/test_webhook_transport.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).absolute().parent.parent
sys.path.insert(0, str(ROOT))

from rewake.db import migrations  # noqa: E402
from rewake.db.engine import Database  # noqa: E402
from tests.support.host_drills import (  # noqa: E402
    drip_drill,
    huge_answer_drill,
    slow_host_drill,
    slow_lookup_drill,
)


@contextmanager
def fresh_database(base_url: str | None, folder: Path) -> Iterator[str]:
    """A migrated database for one drill: a new SQLite file, or a new PostgreSQL schema
    (dropped afterwards) when `base_url` is given."""
    schema = None
    if base_url is None:
        url = f"sqlite:///{folder / f'drill-{uuid.uuid4().hex[:8]}.db'}"
    else:
        schema = f"rewake_drill_{uuid.uuid4().hex[:8]}"
        admin = Database(base_url)
        with admin.engine.begin() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
        admin.dispose()
        url = base_url + ("&" if "?" in base_url else "?") + f"options=-csearch_path%3D{schema}"
    database = Database(url)
    migrations.upgrade(database.engine)
    database.dispose()
    try:
        yield url
    finally:
        if schema is not None and base_url is not None:
            admin = Database(base_url)
            with admin.engine.begin() as connection:
                connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
            admin.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    parser.add_argument(
        "--drill", choices=["slow-host", "drip", "slow-lookup", "huge", "all"], default="all"
    )
    args = parser.parse_args()
    ok = True
    print(f"database: {args.database_url or 'SQLite file'}")
    with tempfile.TemporaryDirectory(prefix="rewake-host-drills-") as tmp:
        folder = Path(tmp)
        if args.drill in ("slow-host", "all"):
            for settings in (
                {"host_s": 6.0, "timeout_s": 8.0, "lease_s": 13.0, "lookup": True},
                {"host_s": 4.0, "timeout_s": 5.0, "lease_s": 10.0, "lookup": False},
            ):
                with fresh_database(args.database_url, folder) as url:
                    slow = slow_host_drill(url, folder, **settings)  # type: ignore[arg-type]
                print(slow.report())
                ok = ok and slow.ok
        if args.drill in ("drip", "all"):
            with fresh_database(args.database_url, folder) as url:
                drip = drip_drill(url, folder)
            print(drip.report())
            ok = ok and drip.others_on_time
        if args.drill in ("slow-lookup", "all"):
            with fresh_database(args.database_url, folder) as url:
                lookup = slow_lookup_drill(url, folder)
            print(lookup.report())
            ok = ok and lookup.on_time
        if args.drill in ("huge", "all"):
            huge = huge_answer_drill()
            print(huge.report())
            ok = ok and huge.bounded and huge.state == "done"
    print("OK" if ok else "FAILED: see the figures above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
