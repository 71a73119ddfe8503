"""The kill drill: kill -9 sweeper processes at random for a minute while 5,000 marks fall due,
restart them, and count what happened.

    python bench/kill_drill.py [--database-url URL] [--marks 5000] [--seconds 60] [--sweepers 3]

Must print zero double deliveries and zero lost marks; uncertain marks may appear only for
sends that were in flight when their sweeper was killed (each is checked against the kills).
The test suite runs a 15-second form (tests/e2e/test_sweeper_kill_drill.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).absolute().parent.parent
sys.path.insert(0, str(ROOT))

from rewake.db import migrations  # noqa: E402
from rewake.db.engine import Database  # noqa: E402
from tests.support.drills import run_drill  # noqa: E402 - needs the path above


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    parser.add_argument("--marks", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--sweepers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rewake-drill-") as tmp:
        url = args.database_url
        schema = None
        if url is None:
            url = f"sqlite:///{Path(tmp) / 'drill.db'}"
        else:
            schema = f"rewake_drill_{uuid.uuid4().hex[:8]}"
            admin = Database(args.database_url)
            with admin.engine.begin() as connection:
                connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
            admin.dispose()
            url += ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
        database = Database(url)
        migrations.upgrade(database.engine)
        database.dispose()
        try:
            result = run_drill(
                url, Path(tmp), marks=args.marks, kill_for_s=args.seconds, sweepers=args.sweepers
            )
        finally:
            if schema is not None:
                admin = Database(args.database_url)
                with admin.engine.begin() as connection:
                    connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
                admin.dispose()
    print(f"database: {args.database_url or 'SQLite file'}")
    print(result.report())
    ok = result.double_deliveries == 0 and result.lost == 0 and result.uncertain_unexplained == 0
    print("OK" if ok else "FAILED: see the counts above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
