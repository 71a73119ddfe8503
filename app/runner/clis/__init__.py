"""What rewake knows of the CLIs it drives: each one's argv and events (`providers`), the
environment a resumed one gets (`provider_env`), its own conversation files (`conversations`)
and the zone it prints local times in (`hostzone`)."""
