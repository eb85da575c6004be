"""The `judge` evaluator of autorl: LLM-judged pairwise answers, length-controlled win rate."""

__version__ = "0.1.0"
