"""Held-out measurement on the real CLIs: fresh randomised runs that are in no corpus.

Each run draws a new seed (or takes --seed), so the zones, scopes and resets differ from
every capture and from the last run; it drives the pinned Claude Code, Codex and Gemini CLIs
against the loopback mock exactly as tests/realcli does, parses every source they printed,
and prints, per CLI and overall:

- wrong: a reset that does not bracket the truth (or a reset where none was printed);
- refused of answerable: refusals among the sources that printed a reset;
- kinds right: provider and kind as the truth calls for.

    python bench/realcli_heldout.py [--seed N] [--rounds K] [--no-tty]

Figures only: it asserts nothing about them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

REPO = Path(__file__).absolute().parent.parent
sys.path.insert(0, str(REPO))


def load_modules(seed: int) -> dict[str, Any]:
    """The matrix modules, drawn with `seed` (their draws happen at import)."""
    os.environ["REWAKE_REALCLI_SEED"] = str(seed)
    return {cli: importlib.import_module(f"tests.realcli.test_realcli_{cli}")
            for cli in ("claude", "codex", "gemini")}  # fmt: skip


def jobs(modules: dict[str, Any], tty: bool) -> list[tuple[str, Any, Any]]:
    """(cli, run function, case) for every case the modules drew."""
    found = []
    for cli, module in modules.items():
        runner = getattr(module, "run_headless_case", None) or module.run_case
        found += [(cli, runner, case) for case in module.CASES]
        if tty and hasattr(module, "TTY_CASES"):
            found += [(cli, module.run_tty_case, case) for case in module.TTY_CASES]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=1, help="fresh draws to run")
    parser.add_argument("--no-tty", action="store_true", help="headless runs only")
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()

    from tests.realcli.realcli_cases import judge, run_parallel

    totals: dict[str, Counter[str]] = {}
    for round_ in range(args.rounds):
        seed = (
            args.seed + round_
            if args.seed is not None
            else random.SystemRandom().randrange(10_000, 99_999)
        )
        for name in [m for m in sys.modules if m.startswith("tests.realcli.test_realcli_")]:
            del sys.modules[name]
        modules = load_modules(seed)
        todo = jobs(modules, tty=not args.no_tty)
        print(f"round {round_ + 1}: seed {seed}, {len(todo)} runs", flush=True)
        with TemporaryDirectory(prefix="rewake-heldout-") as tmp:
            results = run_parallel(
                lambda job, root=Path(tmp): job[1](job[2], root), todo, workers=args.workers,
                key=lambda job: f"{job[0]}:{job[2].id}",
            )  # fmt: skip
        for key, result in results.items():
            cli = key.split(":", 1)[0]
            count = totals.setdefault(cli, Counter())
            if isinstance(result, BaseException):
                count["run_failed"] += 1
                print(f"  {key}: the run failed: {type(result).__name__}: {result}"[:300])
                continue
            for source, verdict in result.verdicts.items():
                outcome, why = judge(verdict, result.expect)
                count["sources"] += 1
                count[outcome] += 1
                answerable = result.expect.truth is not None
                count["answerable"] += answerable
                count["refused_answerable"] += answerable and verdict.reset_at is None
                kind_right = verdict.kind == result.expect.kind and (
                    result.expect.kind == "none" or verdict.provider == result.expect.provider
                )
                count["kind_right"] += kind_right
                if outcome != "right":
                    print(f"  {key} [{source}]: {outcome}: {why}"[:300])

    def rates(count: Counter[str]) -> str:
        sources = count["sources"] or 1
        answerable = count["answerable"] or 1
        return (
            f"{count['sources']} sources ({count['run_failed']} runs failed): "
            f"wrong {count['wrong']} ({100 * count['wrong'] / sources:.1f} %), "
            f"refused of answerable {count['refused_answerable']}/{count['answerable']} "
            f"({100 * count['refused_answerable'] / answerable:.1f} %), "
            f"kinds right {count['kind_right']}/{count['sources']} "
            f"({100 * count['kind_right'] / sources:.1f} %)"
        )

    overall: Counter[str] = Counter()
    for cli, count in sorted(totals.items()):
        overall.update(count)
        print(f"{cli:7} {rates(count)}")
    print(f"{'all':7} {rates(overall)}")
    print("goal: 0 wrong, refused of answerable <= 2 %, kinds right >= 97 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
