"""autorl: measure whether LLM agents can engineer RL post-training.

Importing this package is cheap on purpose: the CLI, the registry and plugins' hookimpl modules
import it at start-up.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("autorl")
"""Decorate plugin hook implementations with ``@autorl.hookimpl``."""

__all__ = ["__version__", "hookimpl"]
