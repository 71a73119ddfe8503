"""Start-up of rewake's commands, as ratios to a bare interpreter start, in one run.

    python bench/startup_bench.py [--rounds N]

Claude Code waits for `rewake hook claude` on every prompt typed (UserPromptSubmit) and every
session opened (SessionStart), so what a command loads before it knows it has work is paid
over and over. Measured, each as the median of N rounds:

- `python -c pass` with the same interpreter (the venv's), the baseline;
- `rewake hook claude` given a UserPromptSubmit payload of a session rewake never reported;
- `rewake --version`;
- `rewake parse` of one limit banner;
- `rewake ls` on an empty state dir.

rewake is started as a hook starts it: the console script beside the interpreter (what
`rewake setup claude` writes into Claude Code's settings), else `python -m rewake`. The
machine is shared, so the rounds alternate (baseline, then each command, then again): a burst
of load from another process slows one round of each, and the medians keep the ratios. Every
command runs in a state dir of its own, empty, so no round sees another's files. Prints a table
with each ratio's goal and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: A limit banner as Claude Code prints it, for `rewake parse`.
BANNER = "Claude usage limit reached. Your limit will reset at 3pm (Europe/Berlin)."
#: A prompt typed in a session rewake never saw: the hook's most common run by far.
UNREPORTED_PROMPT = json.dumps(
    {
        "session_id": "4f1c2d3e-0000-4000-8000-000000000001",
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "go on",
    }
)


@dataclass(frozen=True, slots=True)
class Command:
    """One command measured: its name, its arguments after `rewake`, its stdin and its goal
    as a ratio to the bare interpreter."""

    name: str
    args: tuple[str, ...]
    stdin: str
    goal: float


COMMANDS = (
    Command("hook claude, unreported session", ("hook", "claude"), UNREPORTED_PROMPT, 4.0),
    Command("--version", ("--version",), "", 3.0),
    Command("parse", ("parse", "--observed-at", "2026-04-01T13:42:35Z"), BANNER, 6.0),
    Command("ls, empty state dir", ("ls",), "", 10.0),
)


def rewake_argv() -> list[str]:
    """The console script beside this interpreter, as a hook runs it; else `-m rewake`."""
    beside = Path(sys.executable).parent / "rewake"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [sys.executable, "-m", "rewake"]


def seconds(argv: Sequence[str], stdin: str, env: Mapping[str, str]) -> float:
    """Wall time of one run; a failing run stops the bench (a ratio of a crash means nothing)."""
    started = time.perf_counter()
    done = subprocess.run(
        list(argv), input=stdin, capture_output=True, text=True, env=dict(env), check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed


def measure(rounds: int) -> tuple[float, dict[str, float]]:
    """(the baseline's median, each command's median), over alternating rounds."""
    rewake = rewake_argv()
    baseline: list[float] = []
    timings: dict[str, list[float]] = {c.name: [] for c in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="rewake-startup-") as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
        for round_number in range(rounds):
            baseline.append(seconds([sys.executable, "-c", "pass"], "", env))
            for number, command in enumerate(COMMANDS):
                state = Path(scratch) / f"{round_number}-{number}"
                state.mkdir()
                # An empty state dir of its own: `ls` finds no database, the hook no record.
                run_env = {**env, "REWAKE_STATE_DIR": str(state)}
                timings[command.name].append(
                    seconds([*rewake, *command.args], command.stdin, run_env)
                )
    return statistics.median(baseline), {k: statistics.median(v) for k, v in timings.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of each (default 15)")
    args = parser.parse_args(argv)
    base, medians = measure(max(args.rounds, 1))
    print(f"rewake start-up, {args.rounds} rounds, {' '.join(rewake_argv())}")
    print(f"{'command':<36}{'median':>10}{'ratio':>8}{'goal':>8}  met")
    print(f"{'python -c pass':<36}{base * 1000:>8.1f}ms{1:>8.1f}")
    for command in COMMANDS:
        median = medians[command.name]
        ratio = median / base
        met = "yes" if ratio <= command.goal else "NO"
        print(f"{command.name:<36}{median * 1000:>8.1f}ms{ratio:>8.1f}{command.goal:>7.0f}x  {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
