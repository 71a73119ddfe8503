"""What `rewake setup` writes into the user's own configuration (`claude_settings`,
`sweeper_service`, through `user_files`) and what `rewake doctor` checks (`doctor`)."""
