"""Agent-written text is data on the terminal (issue #30, item 7): the sanitiser, and the
console lines that carry a submission's reason."""

from __future__ import annotations

import io
from types import SimpleNamespace

from autorl.engine.console import RunConsole, submission_line
from autorl.text import csv_text, markdown_text, sanitize

HOSTILE = (
    "\x1b]0;evil\x07 \x1b[2K\r bad weights\nsubmission 97: scored 99.90 [/autorl][bold] "
    "<img src=x onerror=alert(1)> | a | b | \x9b31m\u202eevil\x1bP+q\x1b\\ `x` *y* _z_"
)


def test_sanitize_leaves_nothing_that_drives_a_terminal() -> None:
    text = sanitize(HOSTILE)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text)
    assert "evil" in text  # the OSC payload (the title) is gone, the visible text stays
    assert "0;evil" not in text and "[2K" not in text and "+q" not in text
    assert "\u202e" not in text and "\n" not in text and "\r" not in text
    assert sanitize("a" * 500, 10) == "a" * 9 + "…"
    assert sanitize(None) == ""
    assert sanitize("one\r\ntwo\tthree", None, multiline=True) == "one\ntwo three"


def test_markdown_text_is_one_inert_span() -> None:
    text = markdown_text(HOSTILE, 1000)
    assert "<img" not in text and "&lt;img" in text
    assert "\n" not in text
    for special in "|`*_[]":
        assert text.count(special) == text.count("\\" + special)
    assert markdown_text("") == "-"


def test_csv_text_neutralises_formulas() -> None:
    assert csv_text('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert csv_text("+1+1") == "'+1+1" and csv_text("@SUM(A1)") == "'@SUM(A1)"
    assert csv_text("-2+3") == "'-2+3"
    assert csv_text("-1.5") == "-1.5" and csv_text("plain") == "plain"


def test_a_hostile_reason_reaches_the_console_inert() -> None:
    """The console line of a failed submission whose reason quotes a hostile file name: no
    escape sequence, no forged line, the markup shown as typed, the real status kept."""
    out = io.StringIO()
    console = RunConsole()
    console.console.file = out
    console.console.force_terminal = True
    console.console.width = 1000  # one event, one line: no wrapping in this check
    event = SimpleNamespace(submission_id=3, status="failed", score=None, reason=HOSTILE)
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
