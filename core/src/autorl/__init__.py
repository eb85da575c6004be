"""autorl: measure whether LLM agents can engineer RL post-training.

Importing this package is cheap on purpose: the CLI, the registry and plugins' hookimpl modules
import it at start-up. It imports nothing outside the standard library until ``hookimpl`` is
asked for, so stdlib-only modules (``autorl.paths``, ``autorl.errors``) also serve the Makefile
before the venv holds pluggy: the engine's environment builds beside the venv's pip install.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    """``hookimpl``, made on first use: decorate plugin hook implementations with
    ``@autorl.hookimpl``."""
    if name == "hookimpl":
        import pluggy

        marker = pluggy.HookimplMarker("autorl")
        globals()["hookimpl"] = marker
        return marker
    raise AttributeError(f"module 'autorl' has no attribute {name!r}")
