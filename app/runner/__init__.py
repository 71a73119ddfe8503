"""`rewake run` and `rewake hook`: rewake starts and supervises the CLI itself."""
