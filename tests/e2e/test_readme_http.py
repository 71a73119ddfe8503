"""docs/api.md's examples, sent request by request to a live `rewake serve` started the way the
page says (tokens and display zone in the environment, an empty folder, its own sweeper and the
default executor), its wall clock set to the page's 2026-11-30 13:06 UTC with libfaketime: each
answer has the status, type and fields shown under its request."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.sweeper import REPO, free_port, stop_all, wait_until

API_DOC = REPO / "docs" / "api.md"
CUT = "…"
#: The page's setup: `REWAKE_API_TOKENS=… REWAKE_DISPLAY_ZONE=Europe/Berlin rewake serve`.
EXAMPLES_ENV = {
    "REWAKE_API_TOKENS": "alice:alice-secret-0123456789",
    "REWAKE_DISPLAY_ZONE": "Europe/Berlin",
}
SHOWN_AT = "2026-11-30 13:06:00"
_LIBFAKETIME_GLOBS = ("usr/lib/*/faketime/libfaketime.so.1", "usr/lib/faketime/libfaketime.so.1",
                      "usr/lib64/faketime/libfaketime.so.1")  # fmt: skip


def api_section() -> str:
    text = API_DOC.read_text(encoding="utf-8")
    return text[text.index("<!-- api:start -->") : text.index("<!-- api:end -->")]


def exchanges() -> list[tuple[str, str]]:
    """The section's ```http blocks, paired: a request, then its answer."""
    blocks = re.findall(r"```http\n(.*?)```", api_section(), flags=re.DOTALL)
    assert len(blocks) % 2 == 0 and blocks
    return list(zip(blocks[::2], blocks[1::2], strict=True))


def split(block: str) -> tuple[str, dict[str, str], str]:
    head, _, body = block.partition("\n\n")
    first, *header_lines = head.strip().splitlines()
    headers = dict(line.split(": ", 1) for line in header_lines)
    return first, headers, body.strip()


def contains(actual: Any, shown: Any, where: str = "") -> None:
    """`shown` is `actual` with fields cut: dicts may leave keys out (marked "…"), and "…"
    stands for any value."""
    if shown == CUT:
        return
    if isinstance(shown, dict):
        assert isinstance(actual, dict), where
        for key, value in shown.items():
            if key != CUT:
                assert key in actual, f"{where}.{key} missing"
                contains(actual[key], value, f"{where}.{key}")
        return
    if isinstance(shown, list):
        assert isinstance(actual, list) and len(actual) == len(shown), where
        for index, (got, want) in enumerate(zip(actual, shown, strict=True)):
            contains(got, want, f"{where}[{index}]")
        return
    assert actual == shown, f"{where}: {actual!r} != {shown!r}"


def libfaketime() -> Path:
    for pattern in _LIBFAKETIME_GLOBS:
        found = sorted(Path("/").glob(pattern))
        if found:
            return found[0]
    pytest.skip("libfaketime is not installed (Debian: apt-get install faketime)")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`rewake serve` as docs/api.md starts it, in an empty folder, at the page's instant."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("REWAKE_")}
    env.update(EXAMPLES_ENV)
    env["PYTHONPATH"] = str(REPO)
    # A frozen wall clock; the monotonic clocks stay real so timers and timeouts still run.
    env.update(LD_PRELOAD=str(libfaketime()), FAKETIME=SHOWN_AT, FAKETIME_DONT_FAKE_MONOTONIC="1")
    env["TZ"] = "UTC"
    log = tmp_path / "serve.log"
    folder = tmp_path / "empty"
    folder.mkdir()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(folder),
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def sweeper_seen() -> bool:
        try:
            answer = httpx.get(
                f"{base}/readyz", headers={"Authorization": "Bearer alice-secret-0123456789"}
            )
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    try:
        assert wait_until(sweeper_seen, 30), log.read_text()
        yield base
    finally:
        stop_all([proc])


def test_the_page_states_the_setup_its_examples_run_against() -> None:
    """docs/api.md names the settings and the instant the examples run against, as started here."""
    text = " ".join(API_DOC.read_text(encoding="utf-8").split())
    settings = " ".join(f"{name}={value}" for name, value in EXAMPLES_ENV.items())
    assert f"`{settings} rewake serve`" in text
    assert f"at {SHOWN_AT[:-3]} UTC" in text


def test_readme_examples_answer_as_shown(served: str) -> None:
    """Each of docs/api.md's requests, sent in order, gets the status, type and body shown under
    it."""
    with httpx.Client(base_url=served, timeout=30) as client:
        for request, answer in exchanges():
            line, headers, body = split(request)
            method, target = line.split(" ", 1)
            sent = client.request(
                method, target, headers=headers, content=body.encode() if body else None
            )
            status_line, answer_headers, shown = split(answer)
            assert sent.status_code == int(status_line.split()[1]), (line, sent.text)
            kind = answer_headers["Content-Type"]
            assert sent.headers["content-type"].startswith(kind), line
            if kind.endswith("json"):
                contains(sent.json(), json.loads(shown), line)
            else:
                for expected in shown.splitlines():
                    assert expected in sent.text.splitlines(), (line, expected)
