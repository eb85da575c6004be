"""The red-team suite can fail: against a deliberately weakened grader the template-leak attack
succeeds.

The grader is weakened in-process (the run is in-process, so the grading service is this
test's): the graded directory is the submitted checkpoint itself (its own chat template is
used) and an evaluation's exception text goes back to the agent as the reason, as before #30.
The same attack, against the real grader, is one of ``test_redteam.py``'s (which requires it
blocked).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from autorl_agent_redteam.agent import outcomes, read_results
from autorl_runner.run import Run
from autorl_sandbox_isolated.sandbox import bwrap_path

from autorl.config import RunConfig


def weaken_grader(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Undo the defences the template-leak attack meets; returns what was patched."""
    patched = []

    def assemble(checkpoint_dir: Path, base_dir: Path, out_dir: Path, **_: Any) -> Path:
        return Path(checkpoint_dir)  # grade the checkpoint as submitted: its template, config

    def from_exception(exc: BaseException) -> tuple[str, dict[str, Any]]:
        return f"evaluation_failed: {type(exc).__name__}: {exc}", {}

    for module_name, name, value in (
        ("autorl_grading.graded", "assemble", assemble),
        ("autorl_grading.service", "assemble", assemble),
        ("autorl_grading.reasons", "from_exception", from_exception),
    ):
        try:  # before #30 there is no graded directory and no reason vocabulary to undo
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if hasattr(module, name):
            monkeypatch.setattr(module, name, value)
            patched.append(f"{module_name}.{name}")
    return patched


@pytest.mark.skipif(bwrap_path() is None, reason="no bwrap")
@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_the_template_leak_lands_on_a_weakened_grader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched = weaken_grader(monkeypatch)
    config = RunConfig.model_validate(
        {
            "task": "gsm8k",
            "model": "tiny",
            "agent": "redteam",
            "sandbox": "isolated",
            "runs_dir": str(tmp_path / "runs"),
            "run_id": "weakened",
            "task_options": {"train_size": 20, "eval_size": 8},
            "agent_options": {"targets": {"only": ["ckpt_template_leak"], "kill_parents": 0}},
            "budget": {"wall_seconds": 120, "max_submissions": 3},
        }
    )
    Run(config, quiet=True).execute()
    results = read_results(tmp_path / "runs" / "weakened" / "workspace")
    seen = outcomes(results)
    assert seen == {"ckpt_template_leak": "succeeded"}, (patched, json.dumps(results, indent=1))
