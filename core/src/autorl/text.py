"""Agent-written text made safe to show: no terminal control, bounded length.

Reasons, checkpoint paths, file names and log lines come from the agent (directly, or through
a validator that quotes them). Printed raw, an OSC/CSI sequence retitles or clears the terminal,
a carriage return or a newline forges a harness line (``submission 97: scored 99.90``), and a
bidi override reorders what the reader sees. :func:`sanitize` turns such text into inert
characters; escaping for a particular sink (rich markup, Markdown, HTML, CSV) is the sink's job
on top of it. Standard library only: the core stays light.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

ELLIPSIS = "…"

ESCAPE_RE = re.compile(
    r"""
      \x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?   # OSC ... BEL or ST (set title, hyperlink)
    | \x1b[P^_X][^\x1b\x9c]*(?:\x1b\\|\x9c)?        # DCS, PM, APC, SOS strings
    | \x1b\[[0-?]*[ -/]*[@-~]?                      # CSI (cursor moves, erase line, colours)
    | \x1b[ -/]*[0-~]?                              # other escapes (charset, keypad, RIS)
    | \x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?     # 8-bit OSC
    | [\x90\x98\x9e\x9f][^\x1b\x9c]*(?:\x1b\\|\x9c)? # 8-bit DCS, SOS, PM, APC
    | \x9b[0-?]*[ -/]*[@-~]?                        # 8-bit CSI
    """,
    re.VERBOSE,
)
"""ECMA-48 escape and control sequences, in their 7-bit and 8-bit forms; an unterminated one
is removed up to where it stops."""

INVISIBLE = frozenset(
    "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c\ufeff"
)
"""Bidi marks, embeddings, overrides and isolates, and the BOM: they reorder or hide text."""


def sanitize(text: object, limit: int | None = 300, *, multiline: bool = False) -> str:
    """``text`` as inert characters: escape sequences removed, every other C0/C1 control
    character and bidi control dropped, each newline, tab or line separator made a space, cut
    to ``limit`` characters with an ellipsis (None: no bound).

    ``multiline`` keeps ``\\n`` (a lone ``\\r`` goes: it moves the cursor back over a line)."""
    if text is None:
        return ""
    value = ESCAPE_RE.sub("", str(text))
    if multiline:
        lines = [_inert(line) for line in value.replace("\r\n", "\n").split("\n")]
        value = "\n".join(line.rstrip() for line in lines)
    else:
        value = _inert(value).strip()
    return clip(value, limit)


def _inert(text: str) -> str:
    """Each whitespace or separator character a plain space; controls and bidi marks gone."""
    kept = []
    for ch in text:
        if ch in INVISIBLE:
            continue
        category = unicodedata.category(ch)
        if ch.isspace() or category in ("Zl", "Zp"):
            kept.append(" ")
        elif category == "Cc":
            continue
        else:
            kept.append(ch)
    return "".join(kept)


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when it was cut."""
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + ELLIPSIS if limit > 0 else ""


MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
"""Characters that start Markdown syntax inside a line: code spans, emphasis, links and
images, table cells, strikethrough; ``<``, ``>`` and ``&`` are HTML-escaped instead."""


def markdown_text(text: object, limit: int | None = 300) -> str:
    """Agent-derived text as one inert Markdown span (a table cell, a list item): sanitized
    (one line, bounded), its HTML escaped (``<img onerror>`` is shown, never rendered) and
    every Markdown special character backslash-escaped, so ``| a | b |`` cannot add cells
    and a backtick cannot open code. Empty text is ``-``."""
    import html

    value = sanitize(text, limit)
    if not value:
        return "-"
    return MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(value, quote=False))


CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n")
"""First characters a spreadsheet reads as a formula (OWASP's CSV-injection list)."""


def csv_text(text: object, limit: int | None = 1000) -> str:
    """Agent-derived text for a CSV cell: sanitized, and prefixed with ``'`` when a spreadsheet
    would read it as a formula (``=HYPERLINK(...)``, ``+1``, ``@SUM``); numbers such as ``-1.5``
    stay numbers."""
    value = sanitize(text, limit)
    if value.startswith(CSV_FORMULA):
        try:
            float(value)
        except ValueError:
            return "'" + value
    return value


def terminal(**settings: Any) -> Console:
    """A rich Console that wraps only on a terminal: piped or logged output keeps each line
    whole (a run path is never split) and tables keep their natural width."""
    from rich.console import Console

    console = Console(**settings)
    if not console.is_terminal:
        console.soft_wrap = True
        console.width = 100_000
    return console
