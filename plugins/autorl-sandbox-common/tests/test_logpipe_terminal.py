"""The log pipe (what a sandboxed agent writes to) through to the harness's terminal."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from autorl_runner.console import RunConsole
from autorl_sandbox_common.logpipe import LogPipe
from rich.console import Console


def test_a_hostile_agent_line_reaches_a_real_terminal_inert(tmp_path: Path) -> None:
    """The whole path an agent's output takes to the harness terminal: a child process writes
    to the harness's log pipe (as a sandboxed agent does), the harness reads the latest line
    and draws its budget bar on a terminal console. The escape sequences (clear screen, an OSC 8
    hyperlink, a C1 CSI) and the markup must arrive as inert text."""
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
