"""The end of a run, whatever happened before: the base-model integrity check, ``run.json``
written once, the plugins' contributions to the run record, the reports (renderers of the
record), the observers. It never loses what was recorded."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from autorl.events import RunEndEvent
from autorl.registry import Registry
from autorl_runner.console import RunConsole, agent_text
from autorl_runner.records_io import EventLog, write_json
from autorl_runner.setup import Setup

CONTRIBUTIONS = "contributions"
"""The run directory's folder of plugins' contributions to the record, one JSON each."""


def observed(events: EventLog, problems: list[Any]) -> None:
    """An observer plugin that raised is recorded in the run's event log (never lost, never
    fatal to the run)."""
    for problem in problems or []:
        events.warning(
            "observer_failed", plugin=problem.plugin, error=problem.message,
            details=(problem.details or "")[-2000:],
        )  # fmt: skip


def contribute(run_dir: Path, run_id: str, registry: Registry) -> list[Any]:
    """Ask every plugin for its contribution to the run's record and write each to
    ``contributions/<name>.json`` (atomically; a stale one of a plugin that has nothing this
    time is removed). Used at a run's end and by ``autorl report``; returns the problems."""
    found, problems = registry.contributions(RunEndEvent(run_id, run_dir))
    folder = run_dir / CONTRIBUTIONS
    folder.mkdir(exist_ok=True)
    names = set()
    for item in found:
        names.add(f"{item.name}.json")
        write_json(
            folder / f"{item.name}.json",
            {
                "name": item.name,
                "summary": dict(item.summary),
                "data": dict(item.data),
                "banner_md": item.banner_md,
                "sections_md": item.sections_md,
            },
        )
    for stale in folder.glob("*.json"):
        if stale.name not in names:
            stale.unlink()
    return problems


@contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the run's end is written (``run.json``, the plugins'
    contributions, the reports: seconds), then take effect: a campaign stopping right after a
    run recorded ``completed`` no longer leaves it without its analysis. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda n, _frame: caught.append(n))
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)  # now, to the run's own handlers


@signals_deferred()
def finish(
    run_dir: Path,
    run_id: str,
    run_info: dict[str, Any],
    reports: list[str],
    registry: Registry,
    setup: Setup | None,
    events: EventLog,
    console: RunConsole,
) -> None:
    """``setup`` is None when the run failed before its task and model were prepared. A
    SIGINT/SIGTERM waits until the end is written (a context manager as decorator: each call
    defers afresh)."""
    if setup is not None:
        # every file: weights, config, tokenizer
        try:
            current = setup.grader.files_hash(setup.model_info.path)
        except OSError as exc:  # the harness out of descriptors or memory: unchecked, said so
            current = None
            events.warning("base_model_unchecked", error=exc.strerror or type(exc).__name__)
            run_info["integrity"] = {"base_model_checked": False}
        if current is not None and current != setup.base_tree_hash:
            events.warning("base_model_modified", expected=setup.base_tree_hash, found=current)
            console.print("[red]the base model in the cache was modified during the run[/]")
            run_info["integrity"] = {"base_model_modified": True}
    write_json(run_dir / "run.json", run_info)
    if (run_dir / "manifest.json").exists():
        observed(events, contribute(run_dir, run_id, registry))
        for name in reports:
            try:
                paths = registry.create("report", name).render(run_dir, run_dir / "report")
                events.info("report_written", report=name, paths=[str(p) for p in paths])
            except Exception as exc:
                events.warning("report_failed", report=name, error=repr(exc))
                # the error can quote what the report read (agent-written names, text)
                console.print(f"[red]report {name!r} failed: {agent_text(exc)}[/]")
    observed(events, registry.on_run_end(RunEndEvent(run_id, run_dir)))
    events.info("run_end")
    events.close()
