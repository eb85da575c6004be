"""Helpers for the CLI adapters' tests: a run-like context without installing any CLI.

Test-time only: it needs the testing kit (``autorl-testing``), which the adapters' tests use.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from autorl_testing import agent_context
from autorl_testing.conformance import AgentConformance

from autorl.types import AgentContext


def cli_context(tmp_path: Path, driver: str = "openai/gpt-5.2", **options: Any) -> AgentContext:
    """A workspace and HOME under ``tmp_path``; ``executable`` defaults to ``echo`` so
    ``launch`` builds the command without installing the real CLI."""
    return agent_context(tmp_path, driver=driver, options={"executable": "echo", **options})


def launched(agent: Any, tmp_path: Path, **kwargs: Any) -> tuple[list[str], dict[str, str], Any]:
    """``agent.launch`` on :func:`cli_context` (same arguments): argv, env and the context."""
    ctx = cli_context(tmp_path, **kwargs)
    launch = agent.launch(ctx)
    return list(launch.argv), dict(launch.env), ctx


def collected_events(agent: Any, tmp_path: Path, native: Path, into: str) -> list[dict[str, Any]]:
    """A CLI's recorded native log ``native`` (a file or a directory) placed at ``home/<into>``
    as the CLI leaves it, then ``agent.collect_from``: the events of the common trajectory."""
    from autorl_agent_cli_common.trajectory import read_trajectory

    target = tmp_path / "home" / into
    target.parent.mkdir(parents=True, exist_ok=True)
    if native.is_dir():
        shutil.copytree(native, target)
    else:
        shutil.copy(native, target)
    written = agent.collect_from(tmp_path / "home", tmp_path / "ws", tmp_path / "run")
    return read_trajectory(written[-1])


def collected_tool_use(
    agent: Any, tmp_path: Path, native: Path, into: str
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """:func:`collected_events`, then the first tool call, the first tool result (checked to
    answer that call) and the turns: what reading a CLI's log of one tool use must give."""
    events = collected_events(agent, tmp_path, native, into)
    call = next(e for e in events if e["type"] == "tool_call")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["id"] == call["id"], f"the first result {result!r} answers another call"
    return call, result, [e for e in events if e["type"] == "turn"]


class CliAgentConformance(AgentConformance):
    """The agent conformance checks for a CLI adapter, with ``echo`` standing in for the CLI."""

    driver: ClassVar[str | None] = "openai/gpt-5.2"
    agent_options: ClassVar[Mapping[str, Any]] = {"executable": "echo"}
