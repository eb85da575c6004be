"""Shared pieces of the agent-CLI adapters (claude-code, codex, gemini-cli, opencode, openhands)."""
