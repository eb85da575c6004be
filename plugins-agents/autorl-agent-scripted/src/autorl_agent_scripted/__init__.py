"""The `scripted` agent of autorl: no LLM, a fixed per-task reference recipe."""

__version__ = "0.1.0"
