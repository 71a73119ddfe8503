"""The runner's client of a live `rewake serve` (REWAKE_URL, REWAKE_TOKEN): real processes,
real HTTP. `rewake run` and `rewake ls` talk to the service exactly as the API's hosts do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rewake.runner.store.stores import HttpStore, StoreError, token_parts
from tests.support.serve import serving_with_token

SECRET = "s3cret-for-the-client-test"
QUOTA = "You've hit your limit · resets 8pm (Europe/Berlin)"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`rewake serve` with one named token, on a SQLite file of its own."""
    with serving_with_token(tmp_path_factory.mktemp("served"), f"laptop:{SECRET}") as url:
        yield url


@pytest.mark.parametrize("token", [f"laptop:{SECRET}", SECRET])
def test_the_client_reports_lists_and_reads_with_either_token_form(
    service: str, token: str
) -> None:
    """REWAKE_TOKEN as `name:secret` (as REWAKE_API_TOKENS lists it) or the bare secret: a
    report, the list (no redirect) and the session all answer, as the service's `laptop`."""
    store = HttpStore(service, token=token)
    root_id = f"client-{len(token)}"
    try:
        body = {"attempt": 1, "message": QUOTA, "observed_at": datetime.now(UTC).isoformat()}
        answer = store.report_failure(root_id, "r1", body)
        assert answer["verdict"]["kind"] == "provider_quota"
        listed = store.list_sessions(limit=50)
        assert root_id in [session["root_id"] for session in listed["sessions"]]
        session = store.get_session(root_id)
        assert session["timeline"][0]["actor"] == "laptop"
    finally:
        store.close()


def test_a_wrong_token_is_refused_by_code(service: str) -> None:
    """A token the service does not know is `unauthorized`, not a redirect or a crash."""
    store = HttpStore(service, token="laptop:not-the-secret")
    try:
        with pytest.raises(StoreError) as refused:
            store.list_sessions()
        assert (refused.value.code, refused.value.status) == ("unauthorized", 401)
    finally:
        store.close()


def test_rewake_ls_against_the_service(service: str, tmp_path: Path) -> None:
    """`rewake ls --json` with REWAKE_URL and a `name:secret` REWAKE_TOKEN lists the service's
    sessions and exits 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    env |= {"REWAKE_URL": service, "REWAKE_TOKEN": f"laptop:{SECRET}",
            "REWAKE_STATE_DIR": str(tmp_path / "state")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "rewake", "ls", "--json"], env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) is not None


def test_token_parts() -> None:
    """`name:secret` splits at the first colon; a bare secret has no name."""
    assert token_parts("laptop:a:b") == ("laptop", "a:b")
    assert token_parts("bare") == (None, "bare")
    assert token_parts(None) == (None, None)
