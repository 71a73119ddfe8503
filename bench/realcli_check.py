"""Read every captured real-CLI run with the parser and check it against the reset it was served.

    python bench/realcli_check.py CAPTURES [--cli claude] [--show all|misses]

CAPTURES holds one folder per run, `<cli>/<set>/<case>/`, each with a `meta.json` (the
`observed_at` the CLI printed at, the zone it ran under as `zone_for_parse`, and the reset the
mock provider served as `truth_reset_epoch`) beside what the CLI printed: `stdout.txt`,
`stderr.txt`, `banner.txt`, interactive `screen.txt` / `raw-plain.txt` / `screen-history.txt`,
and a hook's `hook-*-StopFailure.json` (its `last_assistant_message`). Each text is parsed on
its own, with that observed_at and zone, and scored:

- right: reset_at <= truth <= reset_at + resolution_s;
- WRONG: a reset that misses the truth (early or late);
- refused: no reset for a run that was served one (with the verdict's kind and refusal code);
- no truth: a run served no reset (login, credit, allowed): its kind is listed.

Prints one line per text that is not right (or every text with --show all), then the counts.
Exits 1 when any reset is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewake.parsers import parse

TEXTS = (
    "stdout.txt",
    "stderr.txt",
    "banner.txt",
    "screen.txt",
    "raw-plain.txt",
    "screen-history.txt",
)


def texts_of(case: Path) -> list[tuple[str, str]]:
    """(name, text) of everything the CLI printed in one run, the hook's message included."""
    found = []
    for name in TEXTS:
        path = case / name
        if path.is_file():
            found.append((name, path.read_text(encoding="utf-8", errors="replace")))
    for path in sorted(case.glob("hook-*-StopFailure.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        message = payload.get("last_assistant_message")
        if isinstance(message, str):
            found.append((path.name, message))
    return [(name, text) for name, text in found if text.strip()]


def score(case: Path, name: str, text: str) -> tuple[str, str]:
    """The score of one text and a line describing its verdict."""
    meta = json.loads((case / "meta.json").read_text(encoding="utf-8"))
    observed_at = datetime.fromisoformat(meta.get("observed_at") or meta["t_start_utc"])
    verdict = parse(text, observed_at=observed_at, zone=meta.get("zone_for_parse"))
    refusal = verdict.refusal.code if verdict.refusal else "-"
    described = (
        f"{verdict.kind} {verdict.provider} scope={verdict.scope} "
        f"native={verdict.native_auto_continue} reset_at={verdict.reset_at} refusal={refusal}"
    )
    epoch = meta.get("truth_reset_epoch")
    if epoch is None:
        return f"no truth: {verdict.kind}", described
    truth = datetime.fromtimestamp(epoch, UTC)
    if verdict.reset_at is None:
        return f"refused: {verdict.kind} {refusal}", described
    latest = verdict.reset_at + timedelta(seconds=verdict.resolution_s or 0)
    if verdict.reset_at <= truth <= latest:
        return "right", described
    return "WRONG", f"{described} truth={truth.isoformat()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("captures", type=Path)
    parser.add_argument("--cli", default="claude")
    parser.add_argument("--show", choices=("all", "misses"), default="misses")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    for meta in sorted((args.captures / args.cli).glob("*/*/meta.json")):
        case = meta.parent
        for name, text in texts_of(case):
            result, described = score(case, name, text)
            counts[result] += 1
            if args.show == "all" or result != "right":
                print(f"{result:32} {case.relative_to(args.captures)}/{name}: {described}")
    print()
    for result, count in sorted(counts.items()):
        print(f"{count:6}  {result}")
    return 1 if counts["WRONG"] else 0


if __name__ == "__main__":
    sys.exit(main())
