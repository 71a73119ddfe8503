"""`python -m rewake.sweeper` is `rewake sweep`."""

from __future__ import annotations

import argparse
import sys

from rewake.sweeper.cli import register


def main() -> int:
    parser = argparse.ArgumentParser(prog="rewake")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sweep", *sys.argv[1:]])
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
