"""Unit tests: one module's behaviour, no server, no child process of the service."""
