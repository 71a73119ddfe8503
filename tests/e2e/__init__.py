"""End-to-end tests: the installed service and CLI in processes of their own."""
