"""The end of a run, whatever happened before: the base-model integrity check, the reports,
the results store, the observers. It never loses what was recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autorl.engine.console import RunConsole
from autorl.engine.records_io import EventLog, write_json
from autorl.engine.setup import Setup
from autorl.events import RunEndEvent
from autorl.registry import Registry


def observed(events: EventLog, problems: list[Any]) -> None:
    """An observer plugin that raised is recorded in the run's event log (never lost, never
    fatal to the run)."""
    for problem in problems or []:
        events.warning(
            "observer_failed", plugin=problem.plugin, error=problem.message,
            details=(problem.details or "")[-2000:],
        )  # fmt: skip


def finish(
    run_dir: Path,
    run_id: str,
    reports: list[str],
    registry: Registry,
    setup: Setup | None,
    events: EventLog,
    console: RunConsole,
) -> None:
    """``setup`` is None when the run failed before its task and model were prepared."""
    if setup is not None:
        # every file: weights, config, tokenizer
        current = setup.grader.files_hash(setup.model_info.path)
        if current != setup.base_tree_hash:
            events.warning("base_model_modified", expected=setup.base_tree_hash, found=current)
            console.print("[red]the base model in the cache was modified during the run[/]")
            run_json = run_dir / "run.json"
            data = json.loads(run_json.read_text())
            data["integrity"] = {"base_model_modified": True}
            write_json(run_json, data)
    if (run_dir / "manifest.json").exists():
        for name in reports:
            try:
                paths = registry.create("report", name).render(run_dir, run_dir / "report")
                events.info("report_written", report=name, paths=[str(p) for p in paths])
            except Exception as exc:
                events.warning("report_failed", report=name, error=repr(exc))
                console.print(f"[red]report {name!r} failed: {exc}[/]")
        append_result(run_dir)
    observed(events, registry.on_run_end(RunEndEvent(run_id, run_dir, _summary(run_dir))))
    events.info("run_end")
    events.close()


def _summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "report" / "summary.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        return {}


def append_result(run_dir: Path) -> None:
    """Append this run's summary to the results store (``<runs_dir>/results.jsonl``)."""
    summary = _summary(run_dir)
    if summary:
        with (run_dir.parent / "results.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(summary, default=str) + "\n")
