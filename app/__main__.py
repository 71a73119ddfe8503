"""`python -m rewake` is the `rewake` command."""

from __future__ import annotations

import sys

from rewake.cli import main

if __name__ == "__main__":
    sys.exit(main())
