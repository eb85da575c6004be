"""docs/hooks.md documents every hookspec with its exact, current signature."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from autorl import hookspecs

DOC = Path(__file__).resolve().parents[1] / "docs" / "hooks.md"


def hookspec_functions() -> dict[str, object]:
    """Every function of autorl.hookspecs that carries pluggy's hookspec marker."""
    marker = f"{hookspecs.PROJECT}_spec"
    return {
        name: fn
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, marker)
    }


def signature_line(name: str, fn: object) -> str:
    """``def name(arg: Ann) -> Ret`` with annotations as written in the source."""
    sig = inspect.signature(fn)
    params = ", ".join(
        f"{p.name}: {p.annotation}" if p.annotation is not inspect.Parameter.empty else p.name
        for p in sig.parameters.values()
    )
    return f"def {name}({params}) -> {sig.return_annotation}"


def documented_signatures() -> dict[str, str]:
    """Hook name -> the ``def autorl_...`` line found in the doc's code blocks."""
    found: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"def (autorl_\w+)\(.*", line.strip())
        if match:
            found.setdefault(match.group(1), line.strip().rstrip(":"))
    return found


def test_hookspecs_are_found() -> None:
    assert len(hookspec_functions()) >= 12
    assert set(hookspecs.REGISTRATION_HOOKS.values()) <= set(hookspec_functions())


@pytest.mark.parametrize("name", sorted(hookspec_functions()))
def test_hookspec_is_documented_with_its_exact_signature(name: str) -> None:
    documented = documented_signatures()
    expected = signature_line(name, hookspec_functions()[name])
    assert name in documented, f"docs/hooks.md does not document {name}; add:\n    {expected}"
    assert documented[name] == expected, (
        f"docs/hooks.md has a stale signature for {name}:\n"
        f"  documented: {documented[name]}\n  actual:     {expected}"
    )
    assert f"### `{name}`" in DOC.read_text(encoding="utf-8"), f"no section for {name}"


def test_doc_lists_no_hook_that_does_not_exist() -> None:
    unknown = set(documented_signatures()) - set(hookspec_functions())
    assert not unknown, f"docs/hooks.md documents hooks that autorl.hookspecs lacks: {unknown}"


def test_signature_line_notices_a_change() -> None:
    """The check can fail: a different signature renders differently."""

    def autorl_register_tasks(extra: int) -> list[str]: ...

    assert (
        signature_line("autorl_register_tasks", autorl_register_tasks)
        != (documented_signatures()["autorl_register_tasks"])
    )
