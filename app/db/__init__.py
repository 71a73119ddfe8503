"""The database: engines and sessions, the one UTC column type, the tables, migrations."""
