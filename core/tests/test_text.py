"""Agent-written text is data on the terminal (issue #30, item 7): the sanitiser, and the
console lines that carry a submission's reason."""

from __future__ import annotations

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
