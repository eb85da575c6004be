"""Transformers-backed model loading, batched generation and checkpoint merging for autorl."""
