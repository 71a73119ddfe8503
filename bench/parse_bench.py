"""Benchmark `parsers.parse` against dateparser, on the corpus, in one run.

    python bench/parse_bench.py [--cpu-time]

Measures, each against a baseline taken in the same run:

- throughput: messages per second of `parsers.parse` and of
  `dateparser.search_dates(text, languages=["en"])` on the same corpus messages, and the ratio;
- accuracy: how many stated resets each got wrong against the cases' expected reset_at
  (dateparser scores a hit when any date it finds is within 60 s of the expected instant, naive
  dates read in the case's zone; for that count it is given the case's observed_at as its
  relative base, or it could not place a bare "5pm" at all);
- time per KiB of a 1 KiB, 64 KiB and 1 MiB scrollback of corpus messages and noise;
- cold start of `python -m rewake parse` against `python -c pass`.

The machine is shared, so a ratio of two figures measured a second apart can be off by half.
Both sides of a ratio are therefore measured in alternating rounds, and each keeps its fastest
round: a burst of load from another process then slows a round, not the ratio. On a machine
loaded past its cores, a 1 MiB parse waits for the CPU many times while a 1 KiB one mostly
does not, and wall time no longer measures the parser: --cpu-time times the parses (and
dateparser) by this thread's CPU time instead. The cold starts stay wall time.

The corpus is tests/corpus/real/*.txt with their .json; when there is none yet, the texts of
/work/shared/corpus/messages.jsonl with an assumed observed_at. Nothing is cached between
calls: every timed parse gets its own observed_at. Prints a table and exits 0.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rewake import parsers

ROOT = Path(__file__).resolve().parent.parent

REAL_CORPUS = ROOT / "tests" / "corpus" / "real"
SHARED_MESSAGES = Path("/work/shared/corpus/messages.jsonl")
ASSUMED_OBSERVED_AT = datetime(2026, 7, 25, 12, 0, tzinfo=UTC)

GOAL_THROUGHPUT_RATIO = 50.0
GOAL_PER_KIB_RATIO = 1.5
GOAL_COLD_START_S = 0.2

KiB = 1024
#: Rounds of each alternating measurement; each side keeps its fastest.
ROUNDS = 3

#: The clock of the in-process timings: wall time, or with --cpu-time this thread's CPU time.
clock: Callable[[], float] = time.perf_counter

# Every timed parse gets an observed_at no other got: a cache keyed on the arguments never hits.
_FRESH_MICROSECONDS = itertools.count(1)


def fresh_shift() -> timedelta:
    return timedelta(microseconds=next(_FRESH_MICROSECONDS))


@dataclass(frozen=True, slots=True)
class Case:
    """One corpus message with the arguments parse gets and the reset it should find."""

    ident: str
    text: str
    observed_at: datetime
    zone: str | None
    provider: str | None
    expected_reset: datetime | None
    #: False when the case does not say whether a reset is stated (the fallback messages).
    reset_known: bool = True


def load_cases() -> tuple[list[Case], str]:
    """The real corpus, or the shared messages when the corpus is still empty."""
    texts = sorted(REAL_CORPUS.glob("*.txt"))
    cases = []
    for text_path in texts:
        meta_path = text_path.with_suffix(".json")
        if not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        expected = (meta.get("expected") or {}).get("reset_at")
        cases.append(
            Case(
                ident=text_path.stem,
                text=text_path.read_text(encoding="utf-8"),
                observed_at=datetime.fromisoformat(meta["observed_at"]),
                zone=meta.get("zone"),
                provider=meta.get("provider"),
                expected_reset=datetime.fromisoformat(expected) if expected else None,
            )
        )
    if cases:
        return cases, f"{REAL_CORPUS.relative_to(ROOT)} ({len(cases)} cases)"
    for line in SHARED_MESSAGES.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        expected = item.get("expected_reset_utc")
        expected_at = datetime.fromisoformat(expected) if expected else None
        # Assumed: an hour before a reset the message fixes, else a fixed moment.
        observed = expected_at - timedelta(hours=1) if expected_at else ASSUMED_OBSERVED_AT
        known = expected_at is not None or item.get("reset_form") == "none"
        cases.append(Case(item["id"], item["text"], observed, None, None, expected_at, known))
    return cases, f"{SHARED_MESSAGES} ({len(cases)} messages, observed_at assumed)"


# --------------------------------------------------------------------------- throughput


def time_parse_passes(cases: Sequence[Case], min_seconds: float = 0.5) -> tuple[float, int]:
    """Seconds per message of parsers.parse, over as many passes as fill min_seconds."""
    calls = 0
    started = clock()
    elapsed = 0.0
    passes = 0
    while elapsed < min_seconds or passes == 0:
        # A fresh observed_at each pass: a result cache keyed on the arguments cannot help.
        shift = fresh_shift()
        for case in cases:
            parsers.parse(
                case.text,
                observed_at=case.observed_at + shift,
                zone=case.zone,
                provider=case.provider,
            )
        calls += len(cases)
        passes += 1
        elapsed = clock() - started
    return elapsed / calls, passes


def time_dateparser_pass(cases: Sequence[Case]) -> float:
    """Seconds per message of dateparser.search_dates(text, languages=["en"]), one pass."""
    from dateparser.search import search_dates

    started = clock()
    for case in cases:
        search_dates(case.text, languages=["en"])
    return (clock() - started) / len(cases)


def compare_throughput(cases: Sequence[Case]) -> tuple[float, float, int]:
    """(seconds per message of parse, of dateparser, parse passes): each the fastest of
    ROUNDS alternating rounds, a round of parse lasting about as long as a dateparser pass."""
    parse_best = dateparser_best = float("inf")
    passes = 0
    for _ in range(ROUNDS):
        parse_s, round_passes = time_parse_passes(cases)
        parse_best = min(parse_best, parse_s)
        passes += round_passes
        dateparser_best = min(dateparser_best, time_dateparser_pass(cases))
    return parse_best, dateparser_best, passes


# --------------------------------------------------------------------------- accuracy


def parse_case(case: Case) -> parsers.Verdict:
    """The case's verdict, with the arguments the case assumes."""
    return parsers.parse(
        case.text, observed_at=case.observed_at, zone=case.zone, provider=case.provider
    )


def parse_misses(cases: Sequence[Case]) -> tuple[int, int]:
    """(stated resets parse got wrong, resets parse gave where the case expects none)."""
    wrong = invented = 0
    for case in cases:
        verdict = parse_case(case)
        if not case.reset_known:
            continue
        if case.expected_reset is None:
            invented += verdict.reset_at is not None
        elif verdict.reset_at != case.expected_reset:
            wrong += 1
    return wrong, invented


def dateparser_found(case: Case) -> list[datetime]:
    """Every date dateparser finds, as aware instants (naive ones read in the case's zone)."""
    from dateparser.search import search_dates

    zone = ZoneInfo(case.zone) if case.zone else UTC
    base = case.observed_at.astimezone(zone).replace(tzinfo=None)
    try:
        found = search_dates(
            case.text,
            languages=["en"],
            settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "future"},
        )
    except Exception:  # a crash on one message is a miss, not the end of the run
        return []
    instants = []
    for _, moment in found or []:
        instants.append(moment if moment.tzinfo else moment.replace(tzinfo=zone))
    return instants


def dateparser_misses(cases: Sequence[Case]) -> tuple[int, int]:
    """(stated resets dateparser found no date for, cases without a reset it found dates in)."""
    wrong = invented = 0
    for case in cases:
        if not case.reset_known:
            continue
        found = dateparser_found(case)
        if case.expected_reset is None:
            invented += bool(found)
            continue
        expected = case.expected_reset
        if not any(abs((moment - expected).total_seconds()) <= 60 for moment in found):
            wrong += 1
    return wrong, invented


# --------------------------------------------------------------------------- scrollback

NOISE = (
    "$ npm test",
    "  ✓ renders the banner (12 ms)",
    "2026-07-25 14:03:11,123 INFO worker: job 4411 finished in 3.2s",
    "warning: unused variable `x` at src/main.rs:41:9",
    "╭──────────────────────────────────────────────╮",
    "│ > continue                                   │",
    "╰──────────────────────────────────────────────╯",
    "\x1b[1;32m✔\x1b[0m Compiled successfully",
    "\x1b]0;claude — ~/src/app\x07",
    '{"type":"assistant","message":{"content":[{"type":"text","text":"Running the tests."}]}}',
    "✻ Brewed for 1h 14m 17s",
)


def scrollback(cases: Sequence[Case], size: int, seed: int = 7) -> str:
    """Noise with a corpus message every so often, cut to `size` characters."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        part = rng.choice(cases).text if rng.random() < 0.05 else rng.choice(NOISE)
        parts.append(part)
        length += len(part) + 1
    return "\n".join(parts)[-size:]


def seconds_per_parse(text: str, min_seconds: float = 0.3, min_runs: int = 3) -> float:
    """The fastest of repeated parses of one text (each with its own observed_at)."""
    best = float("inf")
    runs = 0
    started = clock()
    while runs < min_runs or clock() - started < min_seconds:
        observed = ASSUMED_OBSERVED_AT + fresh_shift()
        began = clock()
        parsers.parse(text, observed_at=observed, zone="Europe/Berlin")
        best = min(best, clock() - began)
        runs += 1
    return best


# --------------------------------------------------------------------------- cold start


def median_run_seconds(argv: Sequence[str], stdin: str, runs: int) -> tuple[float, str | None]:
    """Median wall time of a fresh process; the first error line when it fails."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, cwd=ROOT, check=False
        )
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
            return statistics.median(times), lines[-1]
    return statistics.median(times), None


# --------------------------------------------------------------------------- report


def measured(label: str, action: Callable[[], Any]) -> Any:
    """Run one measurement; a failure is reported and the run goes on."""
    try:
        return action()
    except Exception as error:  # one broken measurement must not hide the rest
        print(f"  {label}: failed: {type(error).__name__}: {error}")
        return None


def row(metric: str, value: str, goal: str = "", met: bool | None = None) -> None:
    """One line of the table: the figure, its goal and whether it met it."""
    verdict = "" if met is None else ("ok" if met else "MISSED")
    print(f"  {metric:<38} {value:>22}  {goal:<14} {verdict}")


def main() -> int:
    global clock
    if "--cpu-time" in sys.argv[1:]:
        clock = time.thread_time
        print("in-process times: this thread's CPU time (--cpu-time)")
    cases, source = load_cases()
    print(f"corpus: {source}")
    stated = sum(case.expected_reset is not None for case in cases)
    stateless = sum(case.reset_known and case.expected_reset is None for case in cases)

    # Warm both up: pattern compilation and dateparser's language data are not throughput.
    measured("parse warm-up", lambda: [parse_case(case) for case in cases])
    from dateparser.search import search_dates

    search_dates("resets at 5pm on Jul 25", languages=["en"])

    throughput = measured("throughput", lambda: compare_throughput(cases))
    parse_result = (throughput[0], throughput[2]) if throughput else None
    dateparser_s = throughput[1] if throughput else None
    parse_wrong = measured("parse accuracy", lambda: parse_misses(cases))
    dateparser_wrong = measured("dateparser accuracy", lambda: dateparser_misses(cases))

    sizes = {"1 KiB": KiB, "64 KiB": 64 * KiB, "1 MiB": 1024 * KiB}
    texts = {label: scrollback(cases, size) for label, size in sizes.items()}
    per_kib: dict[str, float] = {}
    for _ in range(ROUNDS):  # sizes alternate, so load from elsewhere hits them alike
        for label, size in sizes.items():
            seconds = measured(f"scrollback {label}", partial(seconds_per_parse, texts[label]))
            if seconds is not None:
                per_kib[label] = min(per_kib.get(label, float("inf")), seconds / (size / KiB))

    small_input = "You've hit your session limit · resets 5pm (Europe/Berlin)\n"
    rewake_argv = [
        sys.executable, "-m", "rewake", "parse",
        "--observed-at", "2026-07-25T14:05:00+00:00", "--zone", "Europe/Berlin",
    ]  # fmt: skip
    python_cold = measured(
        "python -c pass", lambda: median_run_seconds([sys.executable, "-c", "pass"], "", runs=7)
    )
    rewake_cold = measured(
        "rewake parse", lambda: median_run_seconds(rewake_argv, small_input, runs=7)
    )

    print()
    row("metric", "value", "goal")
    print("  " + "-" * 82)
    if parse_result is not None:
        parse_s, passes = parse_result
        row("parsers.parse  msgs/s", f"{1 / parse_s:,.0f}  ({passes} passes)")
    if dateparser_s is not None:
        row("dateparser.search_dates  msgs/s", f"{1 / dateparser_s:,.0f}  ({ROUNDS} passes)")
    if parse_result is not None and dateparser_s is not None:
        ratio = dateparser_s / parse_result[0]
        goal = f">= {GOAL_THROUGHPUT_RATIO:.0f}x"
        row(
            "throughput ratio parse : dateparser",
            f"{ratio:,.1f}x",
            goal,
            ratio >= GOAL_THROUGHPUT_RATIO,
        )
    if parse_wrong is not None:
        wrong, invented = parse_wrong
        row(f"parse resets wrong (of {stated} stated)", f"{wrong}")
        row(f"parse resets invented (of {stateless})", f"{invented}")
    if dateparser_wrong is not None:
        wrong, invented = dateparser_wrong
        row(f"dateparser resets missed (of {stated})", f"{wrong}")
        row(f"dateparser dates found (of {stateless})", f"{invented}")
    for label, seconds in per_kib.items():
        row(f"scrollback {label}  us/KiB", f"{seconds * 1e6:,.1f}")
    if "1 KiB" in per_kib and "1 MiB" in per_kib:
        growth = per_kib["1 MiB"] / per_kib["1 KiB"]
        goal = f"< {GOAL_PER_KIB_RATIO}"
        row("per-KiB ratio 1 MiB : 1 KiB", f"{growth:.2f}", goal, growth < GOAL_PER_KIB_RATIO)
        spread = max(per_kib.values()) / min(per_kib.values())
        row("per-KiB spread max : min", f"{spread:.2f}", goal, spread < GOAL_PER_KIB_RATIO)
    if python_cold is not None:
        row("cold start python -c pass", f"{python_cold[0]:.3f} s")
    if rewake_cold is not None:
        seconds, error = rewake_cold
        if error:
            row("cold start rewake parse", "failed", f"< {GOAL_COLD_START_S} s", False)
            print(f"    {error}")
        else:
            goal = f"< {GOAL_COLD_START_S} s"
            row("cold start rewake parse", f"{seconds:.3f} s", goal, seconds < GOAL_COLD_START_S)
            if python_cold is not None:
                row("  of which beyond the interpreter", f"{seconds - python_cold[0]:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
