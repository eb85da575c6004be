"""AlpacaEval 2.0 task for autorl: answer instructions; judged pairwise against references."""

__version__ = "0.1.0"
