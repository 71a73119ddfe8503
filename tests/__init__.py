"""rewake's test suite, a package: tests import their shared parts from tests.support."""

import sys

if "pytest" in sys.modules:  # under pytest; bench/ imports the drills without it
    import pytest

    # The shared parts assert too (tests.support, the helpers of the folders that keep their
    # own): a failed assert in them is explained as one in a test module is.
    pytest.register_assert_rewrite("tests.support", "tests.realcli", "tests.browser", "tests.hosts")
