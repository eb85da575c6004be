"""Entry point of autorl-analysis (no heavy imports here: every `autorl` command imports it)."""

from __future__ import annotations
