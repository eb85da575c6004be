"""``autorl agent-cli``: install the pinned CLIs ahead of time, list them, extract trajectories.

Installing ahead of time keeps a run's budget clock from paying for a 1-3 minute install, and
lets CI install all five at once (one thread each: the installs are network- and disk-bound).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

from autorl.errors import AutorlError, ConfigError

ADAPTERS = ("claude-code", "codex", "gemini-cli", "opencode", "openhands")


def cli_agents(names: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """Build the named CLI adapters through the registry (all five when ``names`` is empty)."""
    from autorl.registry import get_registry

    registry = get_registry()
    wanted = list(names) or [n for n in ADAPTERS if _installed(registry, n)]
    agents = {}
    for name in wanted:
        agent = registry.create("agent", name)
        if not hasattr(agent, "tool"):
            raise ConfigError(
                f"agent {name!r} is not an agent CLI adapter",
                hint=f"agent CLIs: {', '.join(ADAPTERS)}",
            )
        agents[name] = agent
    return agents


def _installed(registry: Any, name: str) -> bool:
    try:
        registry.get("agent", name)
    except AutorlError:
        return False
    return True


def _stderr(message: str) -> None:
    click.echo(message, err=True)


def install_all(agents: dict[str, Any], log: Callable[[str], None] = _stderr) -> dict[str, float]:
    """Install every agent's pinned CLI concurrently; returns seconds per agent."""

    def one(item: tuple[str, Any]) -> tuple[str, float]:
        name, agent = item
        started = time.monotonic()
        agent.tool.ensure(log=lambda message: log(f"[{name}] {message}"))
        return name, time.monotonic() - started

    with ThreadPoolExecutor(max_workers=max(1, len(agents))) as pool:
        return dict(pool.map(one, agents.items()))


@click.group("agent-cli")
def agent_cli() -> None:
    """The agent CLIs (claude-code, codex, gemini-cli, opencode, openhands)."""


@agent_cli.command("install")
@click.argument("names", nargs=-1)
def install(names: tuple[str, ...]) -> None:
    """Install the pinned CLIs of NAMES (default: every installed adapter), in parallel."""
    try:
        agents = cli_agents(names)
        seconds = install_all(agents)
    except AutorlError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    for name, took in seconds.items():
        tool = agents[name].tool
        click.echo(f"{name}: {tool.requirement} ready in {took:.0f} s at {tool.executable()}")


@agent_cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(as_json: bool) -> None:
    """The CLI adapters, their pinned versions and whether they are installed."""
    rows = []
    for name, agent in cli_agents(()).items():
        tool = agent.tool
        rows.append(
            {
                "agent": name,
                "package": tool.requirement,
                "installed": tool.is_installed(),
                "path": str(tool.executable()),
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        state = "installed" if row["installed"] else "not installed"
        click.echo(f"{row['agent']:<12} {row['package']:<36} {state:<14} {row['path']}")


@agent_cli.command("trajectory")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def trajectory(run_dir: Path) -> None:
    """(Re)write RUN_DIR/agent_trajectory.jsonl from the CLI's native log in RUN_DIR/home.

    Runs of the CLI agents get it automatically at the end; this redoes it (after an upgrade of
    the parser, or for runs made before it existed).
    """
    from autorl_agent_cli_common.collect import collect_run, run_agent_name

    name = run_agent_name(run_dir)
    if name is None:
        click.echo(f"error: {run_dir} is not a run directory with a manifest", err=True)
        sys.exit(2)
    try:
        cli_agents([name])
    except AutorlError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    written = collect_run(run_dir)
    if not written:
        click.echo(f"error: {run_dir} has no agent HOME to read", err=True)
        sys.exit(2)
    lines = written[-1].read_text().count("\n")
    click.echo(f"{written[-1]}: {lines} events; native log copied: {len(written) - 1} file(s)")
