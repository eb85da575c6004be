"""Terminal progress for a run (rich): evaluation bars, the agent's budget countdown, events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl.text import sanitize, terminal

LATEST_WIDTH = 90
"""Characters of the agent's latest output line shown beside its budget bar."""
FIELD_WIDTH = 200
"""Characters of one agent-derived field (a reason, a model path) in a console line."""


def agent_text(value: object, limit: int = FIELD_WIDTH) -> str:
    """Agent-derived text for a rich console line: inert (:func:`autorl.text.sanitize`: no
    escape sequences, no newline that could forge a harness line, bounded) and with its rich
    markup escaped, so ``[/autorl][bold]`` is shown, not interpreted."""
    from rich.markup import escape

    return escape(sanitize(value, limit))


def submission_line(event: Any) -> str:
    """``submission N: status score S (reason)``: the id and score are the harness's; the
    reason may quote the agent (a file name, a path, an exception) and is :func:`agent_text`."""
    score = "" if event.score is None else f" score {event.score:.2f}"
    reason = f" ({agent_text(event.reason)})" if event.reason else ""
    status = agent_text(event.status, 40)
    return f"submission {int(event.submission_id)}: {status}{score}{reason}"


class RunConsole:
    """One rich Progress for the whole run; safe to call from the evaluation thread."""

    def __init__(self, quiet: bool = False) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.quiet = quiet
        # piped or logged: one event per line whatever its length (no wrap at 80 columns
        # splitting a run path), and no progress display at all
        self.console = terminal(stderr=False, quiet=quiet, highlight=False)
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
        if self.console.is_terminal:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.console.is_terminal:
            self.progress.stop()

    def print(self, message: str) -> None:
        """A harness message (rich markup allowed). Control characters go whatever the caller
        put in it, and a message that is not valid markup (an agent-written ``[/x]`` that the
        caller forgot to escape) is printed as plain text instead of raising or hiding text."""
        from rich.errors import MarkupError

        text = sanitize(message, None, multiline=True)
        try:
            self.console.print(text)
        except MarkupError:
            self.console.print(text, markup=False)

    def submission(self, event: Any) -> None:
        """One submission event as one line (:func:`submission_line`)."""
        self.console.print(submission_line(event))

    def eval_progress(self, label: str) -> Any:
        """Return a ``progress(done, total)`` callback drawing a bar named ``label``."""
        task_id = self.progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            self.progress.update(task_id, completed=done, total=total)
            if total and done >= total:
                self.progress.remove_task(task_id)

        return update

    def stages(self, label: str, names: list[str]) -> Any:
        """A bar over named stages (preparing: task, model, evaluator...); call the returned
        ``advance(name)`` as each starts, and once more with ``None`` when all are done."""
        task_id = self.progress.add_task(label, total=len(names))

        def advance(name: str | None) -> None:
            if name is None:
                self.progress.remove_task(task_id)
                return
            done = names.index(name) if name in names else 0
            self.progress.update(task_id, completed=done, description=f"{label}: {name}")

        return advance

    def agent_started(self, budget_seconds: float) -> None:
        self._agent_task = self.progress.add_task("agent budget (s)", total=round(budget_seconds))

    def agent_tick(self, elapsed: float, log_path: Path | None = None) -> None:
        """Advance the budget bar; with ``log_path``, show the agent's latest output line."""
        if self._agent_task is None:
            return
        description = "agent budget (s)"
        line = latest_line(log_path) if log_path is not None and not self.quiet else ""
        if line:
            description = f"{description} {line}"
        self.progress.update(self._agent_task, completed=round(elapsed), description=description)

    def agent_stopped(self) -> None:
        if self._agent_task is not None:
            self.progress.remove_task(self._agent_task)
            self._agent_task = None


def latest_line(path: Path, window: int = 4096) -> str:
    """The last non-empty line of the agent's log, safe to show: the agent wrote it, so
    escape sequences and control characters go, rich markup is escaped and the line is cut to
    :data:`LATEST_WIDTH` characters (:func:`agent_text`)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - window))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(tail.splitlines()):
        if sanitize(line, None):
            return agent_text(line, LATEST_WIDTH)
    return ""
