"""rewake's service: settings, database, domain rules, HTTP API, sweeper, executors, CLI."""
