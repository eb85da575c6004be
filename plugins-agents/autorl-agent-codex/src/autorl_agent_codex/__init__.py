"""autorl agent ``codex``: Codex CLI 0.169.0 headless (codex exec) through the run's LLM gateway."""
