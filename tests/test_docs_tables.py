"""Docs tables that must follow the code: docs/hooks.md's ``AgentContext`` and ``AgentLaunch``
list every field of the dataclasses with its real type and default; docs/submission-lifecycle.md
lists every reason code and status of the grader; ``autorl run --help`` names the reports a run
renders by default. A field added or changed in ``autorl.types``, a new reason code or a new
default fails here until the docs say so."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from autorl.types import AgentContext, AgentLaunch

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOC = DOCS / "hooks.md"
LIFECYCLE = DOCS / "submission-lifecycle.md"
PIPE = re.compile(r"(?<!\\)\|")


def cells(line: str) -> list[str]:
    """A Markdown table row's cells: escaped pipes kept, backticks and spaces stripped."""
    parts = PIPE.split(line.strip())[1:-1]
    return [p.strip().replace("\\|", "|").strip("`") for p in parts]


def documented(cls: type) -> dict[str, tuple[str, str]]:
    """field -> (type, default) from the table whose header starts with ```Cls` field``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    header = f"| `{cls.__name__}` field | type | default | meaning |"
    assert header in lines, f"docs/hooks.md has no table headed {header!r}"
    rows: dict[str, tuple[str, str]] = {}
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        name, type_, default, _meaning = cells(line)
        assert name not in rows, f"{cls.__name__}.{name} is listed twice"
        rows[name] = (type_, default)
    return rows


def default_text(f: dataclasses.Field[Any]) -> str:
    """How the table writes a field's default: ``required``, a literal, or the factory's value."""
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def actual(cls: type) -> dict[str, tuple[str, str]]:
    return {f.name: (str(f.type), default_text(f)) for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("cls", [AgentContext, AgentLaunch], ids=lambda c: c.__name__)
def test_the_table_lists_every_field_with_its_type_and_default(cls: type) -> None:
    doc, code = documented(cls), actual(cls)
    assert list(doc) == list(code), (
        f"docs/hooks.md's {cls.__name__} table lists {list(doc)}; the dataclass has {list(code)}"
    )
    for name, (type_, default) in code.items():
        assert doc[name] == (type_, default), (
            f"docs/hooks.md: {cls.__name__}.{name} is documented as {doc[name]}; "
            f"autorl.types says type {type_!r}, default {default!r}"
        )


def test_the_check_notices_a_change() -> None:
    """The comparison can fail: a field with another default renders differently."""

    @dataclasses.dataclass(frozen=True)
    class AgentLaunch:  # a stand-in of the real one, with another default
        argv: tuple[str, ...]
        env: dict[str, str] = dataclasses.field(default_factory=dict)
        read_only: tuple[Path, ...] = (Path("/opt"),)

    assert actual(AgentLaunch) != documented(AgentLaunch)


def test_run_help_names_the_default_reports() -> None:
    """``--report``'s help says what a run renders when the flag is not given."""
    from autorl_runner.cli import run

    from autorl.config import RunConfig

    option = next(p for p in run.params if p.name == "reports")
    defaults = RunConfig.model_fields["reports"].default_factory()
    said = re.search(r"\(default: ([^)]*)\)", option.help or "")
    assert said, f"--report's help names no default: {option.help!r}"
    named = re.split(r",\s*|\s+and\s+", said.group(1))
    assert named == defaults, f"--report's help says {named}; RunConfig.reports is {defaults}"


def first_column(path: Path, header: str) -> list[str]:
    """The first cells of the table under ``header`` (a header row) in ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert header in lines, f"{path.name} has no table headed {header!r}"
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(cells(line)[0])
    return rows


def test_the_lifecycle_page_lists_every_reason_code() -> None:
    from autorl_grading.reasons import CODES

    documented = first_column(LIFECYCLE, "| code | meaning |")
    assert documented == list(CODES), (
        f"docs/submission-lifecycle.md lists reason codes {documented}; "
        f"autorl_grading.reasons.CODES has {list(CODES)}"
    )


def test_the_lifecycle_page_lists_every_status() -> None:
    from autorl_grading.service import FINAL

    documented = first_column(LIFECYCLE, "| status | meaning | final |")
    assert set(documented) == {"received", "queued", "evaluating"} | FINAL, documented
