"""autorl driver backend ``openai`` (official SDK; Chat Completions or Responses)."""
