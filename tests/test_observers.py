"""Observer hooks see the run: at the end event the run record is complete (read through
``autorl_records``), and an observer that raises is written to the event log (the run itself
is unaffected)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from autorl_runner.run import Run

from autorl import hookimpl
from autorl.config import RunConfig
from autorl.registry import Registry

pytestmark = pytest.mark.e2e  # a real run, observed


def observer_module(seen: list) -> types.ModuleType:
    module = types.ModuleType("observer_for_test")

    @hookimpl
    def autorl_on_run_end(event):
        from autorl_records import load_run, summary

        seen.append(summary(load_run(event.run_dir)))

    @hookimpl
    def autorl_on_run_start(event):
        raise RuntimeError("observer broke on purpose")

    module.autorl_on_run_end = autorl_on_run_end
    module.autorl_on_run_start = autorl_on_run_start
    return module


def test_run_end_sees_the_whole_record_and_observer_failures_are_logged(tmp_path: Path) -> None:
    seen: list = []
    registry = Registry.from_entry_points()
    registry.register(observer_module(seen), "observer-for-test")
    config = RunConfig.model_validate(
        {
            "task": "gsm8k",
            "model": "tiny",
            "runs_dir": str(tmp_path),
            "run_id": "observed",
            "task_options": {"train_size": 20, "eval_size": 8},
            "budget": {"wall_seconds": 5},
        }
    )
    outcome = Run(config, registry=registry, quiet=True).execute()
    assert seen and seen[0]["run_id"] == "observed"
    assert seen[0]["baseline_score"] == outcome.baseline_score
    events = [json.loads(line) for line in (tmp_path / "observed" / "events.jsonl").open()]
    failed = [e for e in events if e["event"] == "observer_failed"]
    assert failed and failed[0]["plugin"] == "observer-for-test"
    assert "observer broke on purpose" in failed[0]["error"]
