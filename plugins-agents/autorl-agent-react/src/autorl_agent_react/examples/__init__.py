"""Driver scripts shipped with the react agent (``--driver scripted/<path>``)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
TINY = str(HERE / "react_tiny.yaml")
"""Six scripted turns: look, write a tiny SFT script, run it, submit, check the budget, stop."""
