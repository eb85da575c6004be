"""autorl driver backend ``anthropic`` (official SDK; Messages API)."""
