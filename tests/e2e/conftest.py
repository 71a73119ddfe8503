"""What every end-to-end test gets: the `rewake` processes it started through a RunEnv
(tests/support/run.py) end with it, however it ended. A test that made its RunEnv itself and
failed midway once left `rewake run` with its pipe open; the garbage collector's
ResourceWarning, an error under filterwarnings=error, then failed the next test on that
worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.run import end_all_started


@pytest.fixture(autouse=True)
def _end_what_the_test_started() -> Iterator[None]:
    yield
    end_all_started()
