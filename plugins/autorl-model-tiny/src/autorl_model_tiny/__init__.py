"""The `tiny` base model: a small Qwen2 chat model shipped as files inside this package."""
