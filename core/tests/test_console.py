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


def test_a_hostile_agent_line_reaches_a_real_terminal_inert(tmp_path: Path) -> None:
    """The whole path an agent's output takes to the harness terminal: a child process writes
    to the harness's log pipe (as a sandboxed agent does), the harness reads the latest line
    and draws its budget bar on a terminal console. The escape sequences (clear screen, an OSC 8
    hyperlink, a C1 CSI) and the markup must arrive as inert text."""
    import subprocess
    import sys

    from autorl_sandbox_common.logpipe import LogPipe
    from rich.console import Console

    log = tmp_path / "agent.log"
    pipe = LogPipe(log).start()
    hostile = (
        "\x1b[2J\x1b]8;;http://evil.example\x07click\x1b]8;;\x07 [bold red]100[/] \u009b31mred"
    )
    code = f"import sys; sys.stdout.write({hostile!r} + chr(10)); sys.stdout.flush()"
    subprocess.run([sys.executable, "-c", code], stdout=pipe.write_fd, check=True)
    pipe.close_writer()
    pipe.join()
    assert hostile in log.read_text()  # the log keeps what the agent wrote, as evidence
    with RunConsole() as console:
        console.agent_started(60)
        console.agent_tick(3.0, log)
        out = io.StringIO()
        terminal = Console(file=out, force_terminal=True, width=200, color_system="truecolor")
        terminal.print(console.progress.make_tasks_table(console.progress.tasks))
    drawn = out.getvalue()
    assert "click" in drawn and "[bold red]100[/]" in drawn  # shown as typed
    for sequence in ("\x1b[2J", "\x1b]8;;http://evil", "\u009b", "\x07"):
        assert sequence not in drawn, repr(sequence)
