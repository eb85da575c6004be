"""Checkpoint intake and the grading API (see the distribution's README)."""
