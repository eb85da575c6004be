"""autorl agent ``claude-code``: Claude Code driven headless through the run's LLM gateway."""
