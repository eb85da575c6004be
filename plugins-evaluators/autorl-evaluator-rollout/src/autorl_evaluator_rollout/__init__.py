"""The `rollout` evaluator of autorl: interactive episodes in lockstep, batched generation."""

__version__ = "0.1.0"
