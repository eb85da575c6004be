"""autorl driver backend ``scripted``: answers from a script file, no LLM, no network."""
