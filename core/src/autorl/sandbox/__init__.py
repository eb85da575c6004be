"""Sandboxes that run the agent apart from the harness."""
