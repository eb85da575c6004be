"""The run's terminal: the agent's latest line beside its budget bar, and the preparing bar."""

from __future__ import annotations

import io
from pathlib import Path

from autorl.engine.console import LATEST_WIDTH, RunConsole, latest_line


def test_the_latest_line_is_the_last_one_written(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    log.write_text("[recipe 1.0s] loading\n[recipe 9.5s]   sft step 3: loss 0.33\n\n  \n")
    assert latest_line(log) == "[recipe 9.5s]   sft step 3: loss 0.33".replace("[", "\\[")
    assert latest_line(tmp_path / "missing.log") == ""
    log.write_bytes(b"")
    assert latest_line(log) == ""


def test_the_agent_cannot_drive_the_harness_terminal(tmp_path: Path) -> None:
    """The agent writes this line: escape sequences (clear screen, a fake prompt, a hyperlink)
    and rich markup must reach the terminal as inert text, cut short."""
    log = tmp_path / "agent.log"
    hostile = "\x1b[2J\x1b]8;;http://x\x07click\x1b]8;;\x07 [bold red]score 100[/] " + "A" * 500
    log.write_text(f"ok\n{hostile}\n")
    line = latest_line(log)
    assert "\x1b" not in line and "\x07" not in line
    assert "\\[bold red]" in line  # markup escaped, shown as typed
    assert len(line) <= LATEST_WIDTH + line.count("\\")
    out = io.StringIO()
    console = RunConsole()
    console.console.file = out
    console.console.print(line)
    assert "score 100" in out.getvalue() and "\x1b[2J" not in out.getvalue()
    log.write_text("sft 10%\rsft 20%\r")  # a bar redrawn with carriage returns: its last state
    assert latest_line(log) == "sft 20%"


def test_preparing_and_agent_bars_show_their_stage(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    log.write_text("[recipe 3.5s] 500 train sessions\n")
    with RunConsole() as console:
        advance = console.stages("preparing", ["task", "model"])
        advance("model")
        (task,) = console.progress.tasks
        assert task.description == "preparing: model" and task.completed == 1
        advance(None)
        assert not console.progress.tasks
        console.agent_started(60)
        console.agent_tick(5.0, log)
        (bar,) = console.progress.tasks
        assert bar.completed == 5 and "500 train sessions" in bar.description
        console.agent_stopped()
        assert not console.progress.tasks
