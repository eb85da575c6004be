"""``autorl reference``: the paper's protocol at its own scale: the shipped ``reference``
campaign profile, and each task's reference data fetched from where it is published."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import click

from autorl.errors import AutorlError, ConfigError

TASKS = ("gsm8k", "humaneval", "alpacaeval", "alfworld", "webshop", "deepsearchqa")


def profile_path() -> Path:
    """The shipped profile (a campaign file)."""
    return Path(str(files("autorl_campaign") / "profiles" / "reference.yaml"))


@click.group()
def reference() -> None:
    """The paper's protocol: the reference campaign profile and its data (docs/reference.md)."""


@reference.command("profile")
@click.argument("out", type=click.Path(path_type=Path, dir_okay=False), required=False)
def profile(out: Path | None) -> None:
    """Write the reference profile to OUT (or print it), to edit and run with autorl campaign."""
    text = profile_path().read_text(encoding="utf-8")
    if out is None:
        click.echo(text, nl=False)
        return
    if out.exists():
        raise ConfigError(f"{out} exists", hint="choose another file name, or delete it first")
    out.write_text(text, encoding="utf-8")
    click.echo(f"wrote {out}; check it with: autorl campaign run {out} --dry-run")


@reference.command("download")
@click.argument("data_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--task", "tasks", multiple=True, help="Only these tasks (default: all six).")
def download(data_dir: Path, tasks: tuple[str, ...]) -> None:
    """Fetch each task's reference data into DATA_DIR/<task> (the profile's data_path)."""
    from autorl.registry import Registry

    registry = Registry.from_entry_points()
    failed = []
    for name in tasks or TASKS:
        task = registry.create("task", name)
        fetch = getattr(task, "download", None)
        if fetch is None:
            click.echo(f"{name}: the task has no downloader; see its docs for its data")
            failed.append(name)
            continue
        try:
            where = fetch(data_dir / name)
        except AutorlError as exc:
            click.echo(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else ""))
            failed.append(name)
            continue
        click.echo(f"{name}: {where}")
    if failed:
        raise ConfigError(
            f"reference data not fetched for: {', '.join(failed)}",
            hint="the messages above say why; fetched tasks are kept (run again for the rest)",
        )
