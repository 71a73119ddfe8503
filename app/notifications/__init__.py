"""Notifications to people about sessions and resumes, sent by the sweeper and by `rewake run`:
the signed notify webhook (REWAKE_NOTIFY_URL) and apprise's services (REWAKE_NOTIFY)."""
