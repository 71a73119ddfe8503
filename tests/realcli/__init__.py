"""The real-CLI tier: Claude Code, Codex and Gemini CLI against a mock provider (README.md)."""
