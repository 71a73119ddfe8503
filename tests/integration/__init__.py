"""Integration tests: the service on a real database, served by uvicorn in the test's process."""
