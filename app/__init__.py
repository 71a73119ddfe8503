"""rewake's service: settings, database, domain rules, HTTP API, sweeper, executors, CLI."""

#: The distribution's version (pyproject.toml reads it from here).
__version__ = "0.1.0"
