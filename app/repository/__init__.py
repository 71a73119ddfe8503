"""All SQL of the service. Domain functions call these; nothing else builds queries."""
