"""``autorl sandbox``: what the sandboxes need on this machine, and the agent runtime."""

from __future__ import annotations

import click


@click.group()
def sandbox() -> None:
    """Check the sandboxes on this machine; build the agent runtime ahead of runs."""


@sandbox.command()
@click.option("--task", "tasks", multiple=True, help="Also include this task's kit requirements.")
def prepare(tasks: tuple[str, ...]) -> None:
    """Build the agent runtime (the training stack, no autorl package) into the cache."""
    from autorl.paths import task_cache_dir
    from autorl.registry import get_registry
    from autorl.types import TaskContext
    from autorl_sandbox_common.runtime import build_runtime

    extra: list[str] = []
    registry = get_registry()
    for name in tasks:
        task = registry.create("task", name)
        version = str(getattr(task, "version", "0"))
        # the folder a default run (seed 0, no task options) prepares into
        prepared = task.prepare(TaskContext(cache_dir=task_cache_dir(task.name, version, 0, {})))
        extra += list(prepared.kit_requires)
    runtime = build_runtime(dict.fromkeys(extra))
    click.echo(f"agent runtime: {runtime.root}")
    click.echo(f"  python {runtime.python}; {len(runtime.distributions)} distributions")


@sandbox.command()
@click.argument("names", nargs=-1)
def check(names: tuple[str, ...]) -> None:
    """Say whether each sandbox (default: all installed) can run here, and what it lacks."""
    from autorl.errors import AutorlError
    from autorl.registry import get_registry

    registry = get_registry()
    failed = 0
    for name in names or tuple(registry.names("sandbox")):
        try:
            box = registry.create("sandbox", name)
            box.check()
            info = box.describe() if hasattr(box, "describe") else {}
        except AutorlError as exc:
            failed += 1
            click.secho(f"{name}: cannot run here: {exc.message}", fg="red")
            if exc.hint:
                click.echo(f"  hint: {exc.hint}")
            continue
        boundary = "a boundary" if info.get("isolated") else "NOT a boundary (development only)"
        click.echo(f"{name}: ok, {boundary}; {info.get('mode', '')}".rstrip("; "))
    if failed and names:
        raise SystemExit(1)
