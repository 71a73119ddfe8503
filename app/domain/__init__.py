"""Domain rules: plain functions that take `now` and raise `DomainError` with stable codes."""
