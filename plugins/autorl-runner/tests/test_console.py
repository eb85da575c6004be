"""The run's terminal: the agent's latest line beside its budget bar, and the preparing bar."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from autorl_runner.console import LATEST_WIDTH, RunConsole, latest_line, submission_line


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


HOSTILE_REASON = (
    "\x1b]0;evil\x07 \x1b[2K\r bad weights\nsubmission 97: scored 99.90 [/autorl][bold] "
    "<img src=x onerror=alert(1)> | a | b | \x9b31m\u202eevil\x1bP+q\x1b\\ `x` *y* _z_"
)


def test_a_hostile_reason_reaches_the_console_inert() -> None:
    """The console line of a failed submission whose reason quotes a hostile file name: no
    escape sequence, no forged line, the markup shown as typed, the real status kept."""
    out = io.StringIO()
    console = RunConsole()
    console.console.file = out
    console.console.force_terminal = True
    console.console.width = 1000  # one event, one line: no wrapping in this check
    event = SimpleNamespace(submission_id=3, status="failed", score=None, reason=HOSTILE_REASON)
    console.submission(event)
    console.print(submission_line(event))  # the same line through the generic print
    text = out.getvalue()
    assert "\x1b]" not in text and "\x1b[2K" not in text and "\r" not in text
    assert "\x07" not in text and "\x9b" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert all(not line.lstrip().startswith("submission 97") for line in lines)
    assert len(lines) == 2 and all("submission 3: failed" in line for line in lines)
    assert text.count("[/autorl][bold]") == 2  # shown, never interpreted
    assert "<img src=x onerror=alert(1)>" in text  # plain text on a terminal: harmless there


def test_a_caller_that_forgot_to_escape_still_prints_its_line() -> None:
    """Defence in depth for :meth:`RunConsole.print`: an unescaped ``[/autorl]`` (invalid
    markup) no longer raises and hides the line, and escape sequences are dropped."""
    out = io.StringIO()
    console = RunConsole()
    console.console.file = out
    console.console.force_terminal = True
    console.print("submission 4: failed (\x1b[2K [/autorl][bold] x)")
    text = out.getvalue()
    assert "submission 4: failed" in text and "[/autorl]" in text and "\x1b[2K" not in text
