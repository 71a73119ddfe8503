"""`rewake parse` as a user runs it: a real process, stdin and files, JSON out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BANNER = "You've hit your limit · resets 8pm (Europe/Berlin)"
CODEX = "You've hit your usage limit. Try again at 3:51 PM."


def run_parse(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewake", "parse", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_parse_prints_one_verdict_from_stdin() -> None:
    """A banner on stdin with --observed-at gives its reset instant as Verdict JSON."""
    result = run_parse("--observed-at", "2026-04-01T13:42:35Z", stdin=BANNER)
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["kind"] == "provider_quota"
    assert verdict["reset_at"] == "2026-04-01T18:00:00Z"
    assert verdict["evidence"]["text"] == BANNER


def test_parse_reads_a_file_and_uses_the_zone(tmp_path: Path) -> None:
    """A file argument is read, and --zone places a Codex host-local time."""
    path = tmp_path / "codex.txt"
    path.write_text(CODEX, encoding="utf-8")
    result = run_parse(
        str(path), "--observed-at", "2026-04-01T13:42:35Z", "--zone", "America/New_York"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["reset_at"] == "2026-04-01T19:51:00Z"


def test_parse_without_zone_says_to_pass_it() -> None:
    """A time that needs the host zone is refused, and the detail names --zone."""
    result = run_parse("--observed-at", "2026-04-01T13:42:35Z", stdin=CODEX)
    refusal = json.loads(result.stdout)["refusal"]
    assert refusal["code"] == "zone_unknown"
    assert "--zone" in refusal["detail"]


def test_parse_rejects_a_naive_observed_at() -> None:
    """--observed-at without an offset is an error with exit status 2, not a guess."""
    result = run_parse("--observed-at", "2026-04-01T13:42:35", stdin=BANNER)
    assert result.returncode == 2
    assert "offset" in result.stderr


def test_parse_rejects_an_observed_at_before_1971() -> None:
    """An --observed-at outside the parser's years exits 2 with a message, no traceback."""
    result = run_parse("--observed-at", "1969-12-31T23:00:00Z", stdin=BANNER)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "1971" in result.stderr


def test_parse_jsonl_answers_the_lines_after_an_observed_at_before_1971() -> None:
    """One line observed before 1971 (or with a non-string observed_at) gets its own coded
    error; the lines before and after it are parsed as usual."""
    lines = [
        json.dumps({"id": "a", "text": BANNER, "observed_at": "2026-04-01T13:42:35Z"}),
        json.dumps({"id": "old", "text": BANNER, "observed_at": "1969-07-20T20:17:00Z"}),
        json.dumps({"id": "num", "text": BANNER, "observed_at": 1775050955}),
        json.dumps({"id": "b", "text": BANNER, "observed_at": "2026-04-01T13:42:35Z"}),
    ]
    result = run_parse("--jsonl", "--zone", "UTC", stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [answer.get("id") for answer in answers] == ["a", "old", "num", "b"]
    assert answers[1]["error"]["code"] == "invalid_observed_at"
    assert "1971" in answers[1]["error"]["detail"]
    assert answers[2]["error"]["code"] == "invalid_observed_at"
    assert answers[0]["reset_at"] == answers[3]["reset_at"] == "2026-04-01T18:00:00Z"


def test_parse_missing_file_is_exit_2() -> None:
    """An unreadable input file exits 2 with a message naming it."""
    result = run_parse("/nonexistent/rewake-input.txt")
    assert result.returncode == 2
    assert "/nonexistent/rewake-input.txt" in result.stderr


def test_parse_jsonl_answers_every_line_with_its_id() -> None:
    """--jsonl answers each line in order, keeping ids, with a coded error for bad lines."""
    lines = [
        json.dumps({"id": "a", "text": BANNER, "observed_at": "2026-04-01T13:42:35Z"}),
        "not json",
        json.dumps(
            {
                "id": "c",
                "text": CODEX,
                "observed_at": "2026-04-01T13:42:35Z",
                "zone": "America/New_York",
                "provider": "codex",
            }
        ),
        json.dumps({"id": "d", "text": 5}),
        json.dumps({"id": "e", "text": BANNER, "observed_at": "2026-04-01T13:42:35"}),
        json.dumps({"id": "f", "text": BANNER, "provider": "cursor"}),
    ]
    result = run_parse("--jsonl", stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [answer.get("id") for answer in answers] == ["a", None, "c", "d", "e", "f"]
    assert answers[0]["reset_at"] == "2026-04-01T18:00:00Z"
    assert answers[1]["error"]["code"] == "malformed_json"
    assert answers[2]["reset_at"] == "2026-04-01T19:51:00Z"
    assert answers[3]["error"]["code"] == "invalid_text"
    assert answers[4]["error"]["code"] == "invalid_observed_at"
    assert answers[5]["error"]["code"] == "invalid_provider"


def test_parse_does_not_import_the_service() -> None:
    """`rewake parse` leaves FastAPI, SQLAlchemy and dateparser unimported (fast start)."""
    code = (
        "import sys, io\n"
        "sys.stdin = io.StringIO(" + repr(BANNER) + ")\n"
        "from rewake.cli import main\n"
        "main(['parse', '--observed-at', '2026-04-01T13:42:35Z'])\n"
        "heavy = [m for m in ('fastapi', 'sqlalchemy', 'sqlmodel', 'dateparser', 'uvicorn')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_parse_output_carries_no_raw_c1_control() -> None:
    """Evidence that quotes 8-bit CSI/OSC codes (U+009B, U+009D, U+009C), which JSON leaves
    raw, is printed with them as \\u escapes: the terminal never sees them, the JSON reads back
    the same text."""
    text = "You've hit your limit \x9b2J\x9d0;t\x9c· resets 8pm (Europe/Berlin)"
    result = run_parse("--observed-at", "2026-04-01T13:42:35Z", stdin=text)
    assert result.returncode == 0, result.stderr
    assert not any(0x7F <= ord(char) <= 0x9F for char in result.stdout)
    assert "\\u009b2J\\u009d0;t\\u009c" in result.stdout
    assert json.loads(result.stdout)["evidence"]["text"] == text
