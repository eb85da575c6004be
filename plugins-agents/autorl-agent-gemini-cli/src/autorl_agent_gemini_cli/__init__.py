"""autorl agent ``gemini-cli``: Gemini CLI 0.61.0 headless (gemini -p)
through the run's LLM gateway."""
