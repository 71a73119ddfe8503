"""The HTTP API: thin FastAPI routes over the domain functions."""
