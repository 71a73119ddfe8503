"""What hosts and people report about a session, and what is shown of it: failures, attempts,
actions, banners, views."""
