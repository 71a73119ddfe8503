"""rewake's test suite, a package: tests import their shared parts from tests.support."""
