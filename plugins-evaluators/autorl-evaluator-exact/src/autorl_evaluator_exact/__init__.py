"""The `exact` evaluator of autorl: greedy generation, final-answer extraction, exact match."""

__version__ = "0.1.0"
