"""Sessions, runs, attempts and their failures as stored: the repository, tombstones, rules."""
