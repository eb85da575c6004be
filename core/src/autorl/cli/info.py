"""``autorl version``, ``autorl plugins list|doctor`` and ``autorl list KIND``.

These read specs only: no plugin factory is imported, so they stay fast and work even when a
plugin's heavy dependencies are missing.
"""

from __future__ import annotations

import json
from typing import Any

import click

from autorl.cli import echoed_json_or_none
from autorl.kinds import PLURALS
from autorl.specs import KINDS


def _registry() -> Any:
    from autorl.registry import get_registry

    return get_registry()


def _supplied(registry: Any) -> dict[str, dict[str, list[str]]]:
    """plugin name -> kind -> names it supplies."""
    out: dict[str, dict[str, list[str]]] = {}
    for kind in KINDS:
        for entry in registry.entries(kind):
            out.setdefault(entry.provider, {}).setdefault(kind, []).append(entry.name)
    return out


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def version(as_json: bool) -> None:
    """Show the versions of autorl and of every plugin distribution."""
    from autorl import __version__

    registry = _registry()
    rows = {"autorl": __version__}
    for plugin in registry.plugins:
        if plugin.distribution and plugin.distribution != "autorl":
            rows[plugin.distribution] = plugin.version or "?"
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for name, ver in rows.items():
        click.echo(f"{name} {ver}")


@click.group()
def plugins() -> None:
    """Inspect installed plugins."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def plugins_list(as_json: bool) -> None:
    """Every plugin: distribution, version, status, and the names it supplies."""
    registry = _registry()
    supplied = _supplied(registry)
    rows = [
        {
            "name": p.name,
            "distribution": p.distribution,
            "version": p.version,
            "module": p.module,
            "status": p.status,
            "error": p.error,
            "supplies": supplied.get(p.name, {}),
        }
        for p in registry.plugins
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from autorl.text import terminal

    table = Table("plugin", "version", "status", "supplies")
    for row in rows:
        supplies = "; ".join(f"{k}: {', '.join(v)}" for k, v in row["supplies"].items())
        status = row["status"] if not row["error"] else f"{row['status']}: {row['error']}"
        table.add_row(row["name"], row["version"] or "", status, supplies)
    terminal().print(table)


@plugins.command("doctor")
def plugins_doctor() -> None:
    """Check every plugin; exit non-zero on any problem (load errors, bad hooks, clashes)."""
    registry = _registry()
    problems = [*registry.problems(), *_shadowed_commands(registry)]
    loaded = [p for p in registry.plugins if p.status == "loaded"]
    if not problems:
        click.echo(f"all {len(loaded)} plugins OK")
        return
    for problem in problems:
        click.secho(f"plugin {problem.plugin!r}: {problem.message}", fg="red", err=True)
        if problem.details:
            tail = problem.details.strip().splitlines()[-6:]
            click.echo("\n".join("    " + line for line in tail), err=True)
    click.echo(f"{len(problems)} problem(s); {len(loaded)} plugins loaded", err=True)
    raise SystemExit(1)


def _shadowed_commands(registry: Any) -> list[Any]:
    """Plugin commands that a built-in command hides (they could never run)."""
    from autorl.cli.main import BUILTIN_COMMANDS
    from autorl.registry import Problem

    return [
        Problem(e.provider, f"command {e.name!r} is hidden by the built-in 'autorl {e.name}'")
        for e in registry.entries("command")
        if e.name in BUILTIN_COMMANDS
    ]


@click.command("list")
@click.argument("kind", type=click.Choice(sorted([*KINDS, *PLURALS])), metavar="KIND")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_components(kind: str, as_json: bool) -> None:
    """List the components of one KIND (task, agent, evaluator, report, driver, model,
    sandbox, executor, command)."""
    kind = PLURALS.get(kind, kind)
    entries = _registry().entries(kind)
    rows = [e.as_dict() for e in entries]
    for row in rows if kind == "evaluator" else ():
        row.update(_contract_rows(None, kind, row))
    if echoed_json_or_none(rows, as_json, f"no {kind} installed"):
        return
    from rich.table import Table

    from autorl.text import terminal

    contracts = kind == "evaluator"  # an evaluator's contract is what a task must provide
    table = Table("name", "provider", *(["contract"] if contracts else []), "description")
    for row in rows:
        contract = [row.get("contract") or ""] if contracts else []
        table.add_row(row["name"], row["provider"], *contract, row["description"])
    terminal().print(table)


def _contract_rows(registry: Any, kind: str, row: dict[str, Any]) -> dict[str, Any]:
    """What a task publishes for its evaluator, or what an evaluator needs from a task (the
    contract it declares, shown by name)."""
    if kind == "evaluator":
        contract = row.get("contract")
        row["contract"] = getattr(contract, "name", None)
    elif not row.get("evaluator"):
        return {}
    else:
        try:
            contract = registry.get("evaluator", row["evaluator"]).spec.contract
        except Exception as exc:  # the evaluator is not installed: say so, do not fail
            return {"contract_kind": f"unknown (evaluator {row['evaluator']!r}: {exc})"}
    return contract.describe() if contract is not None else {}


@click.command()
@click.argument("kind", type=click.Choice(sorted([*KINDS, *PLURALS])), metavar="KIND")
@click.argument("name")
@click.option("--check", is_flag=True, help="Also build it and check its protocol.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(kind: str, name: str, check: bool, as_json: bool) -> None:
    """Resolve NAME (bare, or provider/name) among the components of KIND and show its spec."""
    kind = PLURALS.get(kind, kind)
    registry = _registry()
    entry = registry.get(kind, name)
    row = entry.as_dict()
    if kind in ("task", "evaluator"):
        row.update(_contract_rows(registry, kind, row))
    if check:
        instance = registry.create(kind, entry.qualified_name)
        row["check"] = f"OK: {type(instance).__module__}.{type(instance).__qualname__}"
    if as_json:
        click.echo(json.dumps(row, indent=2))
        return
    width = max(len(key) for key in row)
    for key, value in row.items():
        if value not in (None, {}, ""):
            click.echo(f"{key.ljust(width)}  {value}")
