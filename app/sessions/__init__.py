"""Sessions, runs, attempts and their failures as stored: the repository, tombstones, rules;
and, a layer above the marks, the session service (`service/`)."""
