"""Entry point: the `campaign` and `compare` commands and the `pool` executor (no heavy imports)."""

from __future__ import annotations

from autorl import hookimpl
from autorl.specs import CommandSpec, ExecutorSpec


@hookimpl
def autorl_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec(
            name="campaign",
            factory="autorl_campaign.cli:campaign",
            description="Run a campaign of runs (axes x seeds), resume it, export its results.",
        ),
        CommandSpec(
            name="reference",
            factory="autorl_campaign.reference:reference",
            description="The paper's protocol: the reference campaign profile and its data.",
        ),
        CommandSpec(
            name="compare",
            factory="autorl_campaign.compare:compare",
            description="Statistics of a campaign: CIs, pass@k, paired tests, scaling curves.",
        ),
    ]


@hookimpl
def autorl_register_executors() -> list[ExecutorSpec]:
    return [
        ExecutorSpec(
            name="pool",
            factory="autorl_campaign.pool:PoolExecutor",
            description="N cells at once on this machine, each with its CPU and GPU slots",
        )
    ]
