"""GSM8K task for autorl: offline gsm_symbolic split or the real GSM8K, plus its workspace kit."""

__version__ = "0.1.0"
