"""autorl agent ``opencode``: OpenCode 1.18.33 headless (opencode run)
through the run's LLM gateway."""
