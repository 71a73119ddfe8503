"""The runner's local state: the store (a service or a local database), records, providers, the
host's zone, terminal views, doctor."""
