"""`rewake parse`: one Verdict as JSON, or one per input line with --jsonl.

Imports only the parser and the standard library, so it starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from rewake.exits import Exit
from rewake.parsers import parse
from rewake.printable import json_printable

MAX_INPUT_BYTES = 64 << 20


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "parse",
        help="parse CLI output into a Verdict (JSON)",
        description=(
            "Read a CLI's output and print the Verdict as JSON: whether it stopped on a usage "
            "limit and when that limit resets."
        ),
    )
    parser.add_argument("file", nargs="?", default="-", help="a file, or - for standard input")
    parser.add_argument(
        "--observed-at",
        help="when the CLI printed the text (ISO-8601 with an offset); default: now",
    )
    parser.add_argument(
        "--zone", help="IANA zone of the machine that ran the CLI (no default: never guessed)"
    )
    parser.add_argument("--provider", choices=["claude", "codex", "gemini"])
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help='input lines {"id", "text", "observed_at", "zone", "provider"}; one answer a line',
    )
    parser.set_defaults(func=run)


def _aware(value: str) -> datetime:
    instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if instant.tzinfo is None:
        raise ValueError(f"{value!r} has no UTC offset")
    return instant


def _open(name: str) -> TextIO:
    if name == "-":
        return sys.stdin
    return Path(name).open(encoding="utf-8", errors="replace")


def run(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    try:
        stream = _open(args.file)
    except OSError as error:
        print(f"rewake parse: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return Exit.USAGE
    try:
        if args.jsonl:
            for line in stream:
                if line.strip():
                    print(json_printable(_answer_line(line, now)), flush=False)
            return Exit.OK
        text = stream.read(MAX_INPUT_BYTES)
    finally:
        if stream is not sys.stdin:
            stream.close()
    try:
        observed_at = _aware(args.observed_at) if args.observed_at else now
    except ValueError as error:
        print(f"rewake parse: --observed-at: {error}", file=sys.stderr)
        return Exit.USAGE
    try:
        verdict = parse(text, observed_at=observed_at, zone=args.zone, provider=args.provider)
    except ValueError as error:
        print(f"rewake parse: --observed-at: {error}", file=sys.stderr)
        return Exit.USAGE
    answer = verdict.to_json()
    refusal = answer["refusal"]
    if refusal and refusal["code"] == "zone_unknown" and args.zone is None:
        refusal["detail"] += " (rewake parse --zone Area/City)"
    # The evidence quotes the text, escapes and all: JSON with C1 escaped too, safe to print.
    print(json_printable(answer, indent=2))
    return Exit.OK


def _answer_line(line: str, now: datetime) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except ValueError as error:
        return {"id": None, "error": {"code": "malformed_json", "detail": str(error)}}
    if not isinstance(item, dict):
        return {"id": None, "error": {"code": "malformed_json", "detail": "not a JSON object"}}
    ident = item.get("id")
    text = item.get("text")
    if not isinstance(text, str):
        return {"id": ident, "error": {"code": "invalid_text", "detail": "text must be a string"}}
    zone = item.get("zone")
    provider = item.get("provider")
    if zone is not None and not isinstance(zone, str):
        return {"id": ident, "error": {"code": "invalid_zone", "detail": "zone must be a string"}}
    if provider not in (None, "claude", "codex", "gemini"):
        return {
            "id": ident,
            "error": {"code": "invalid_provider", "detail": f"unknown provider {provider!r}"},
        }
    observed_raw = item.get("observed_at")
    if observed_raw is not None and not isinstance(observed_raw, str):
        return {
            "id": ident,
            "error": {"code": "invalid_observed_at", "detail": "observed_at must be a string"},
        }
    try:
        observed_at = _aware(observed_raw) if observed_raw is not None else now
        # parse refuses an instant outside the years it reasons about (ValueError): that is
        # this line's error, and the lines after it are still answered.
        verdict = parse(text, observed_at=observed_at, zone=zone, provider=provider)
    except (ValueError, OverflowError) as error:
        return {"id": ident, "error": {"code": "invalid_observed_at", "detail": str(error)}}
    return {"id": ident, **verdict.to_json()}
