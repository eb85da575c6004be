"""Terminal progress for a run (rich): evaluation bars, the agent's budget countdown, events."""

from __future__ import annotations

from typing import Any


class RunConsole:
    """One rich Progress for the whole run; safe to call from the evaluation thread."""

    def __init__(self, quiet: bool = False) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.quiet = quiet
        self.console = Console(stderr=False, quiet=quiet, highlight=False)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self._agent_task: Any = None

    def __enter__(self) -> RunConsole:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def print(self, message: str) -> None:
        self.console.print(message)

    def eval_progress(self, label: str) -> Any:
        """Return a ``progress(done, total)`` callback drawing a bar named ``label``."""
        task_id = self.progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            self.progress.update(task_id, completed=done, total=total)
            if total and done >= total:
                self.progress.remove_task(task_id)

        return update

    def agent_started(self, budget_seconds: float) -> None:
        self._agent_task = self.progress.add_task("agent budget (s)", total=round(budget_seconds))

    def agent_tick(self, elapsed: float) -> None:
        if self._agent_task is not None:
            self.progress.update(self._agent_task, completed=round(elapsed))

    def agent_stopped(self) -> None:
        if self._agent_task is not None:
            self.progress.remove_task(self._agent_task)
            self._agent_task = None
