"""`rewake hook claude`: interactive Claude Code's hook, reporting a failed turn and a user
continuing by hand."""
