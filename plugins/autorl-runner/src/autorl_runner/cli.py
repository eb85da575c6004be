"""``autorl run``: one run from flags and/or a TOML/YAML config file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from autorl.errors import ConfigError


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``1.5h`` -> seconds (as ``budget.wall_seconds`` in a file)."""
    from autorl.config import duration_seconds

    try:
        return duration_seconds(text)
    except ValueError:
        raise ConfigError(
            f"--budget {text!r} is not a duration",
            hint="use seconds or a unit: 600, 10m, 1.5h",
        ) from None


def parse_options(pairs: tuple[str, ...], flag: str) -> dict[str, Any]:
    """``key=value`` pairs; values are parsed as JSON when they look like it (numbers, bools)."""
    import json

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag} {pair!r}: expected key=value")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="TOML or YAML run config.",
)
@click.option("--task", help="Task name (default: webshop). See 'autorl list task'.")
@click.option("--agent", help="Agent name (default: scripted). See 'autorl list agent'.")
@click.option(
    "--model",
    help="Base model: a name from 'autorl list model', a local HF dir, or hf:org/name.",
)
@click.option("--driver", help="Driver LLM as <backend>/<model>, for agents that use one.")
@click.option("--seed", type=int, help="Seed for data order, training recipes and sampling.")
@click.option("--budget", help="Agent wall-clock budget: seconds or 10m / 1.5h (default 8m).")
@click.option("--max-submissions", type=int, help="Submissions the agent may make (default 8).")
@click.option(
    "--runs-dir",
    type=click.Path(path_type=Path),
    help="Where run directories go (default ./runs).",
)
@click.option("--run-id", help="Name of the run directory (default: time-task-agent-xxxx).")
@click.option(
    "--sandbox",
    help="Sandbox: isolated (default; bubblewrap namespaces), docker, or local (development "
    "only: not a boundary, scores not comparable).",
)
@click.option(
    "--report",
    "reports",
    multiple=True,
    help="Report plugin(s) to render; repeat for several (default: basic and analysis).",
)
@click.option("--device", help="auto, cpu or cuda (evaluation).")
@click.option(
    "--engine",
    type=click.Choice(["auto", "transformers", "vllm"]),
    help="Evaluation inference engine (docs/engine.md): transformers, vllm (an error when it "
    "cannot run), auto (vllm when it can, else transformers).",
)
@click.option(
    "--engine-precision",
    type=click.Choice(["fp32", "bf16", "auto"]),
    help="Precision of the vLLM CPU engine (docs/engine.md): fp32 (default; outputs equal the "
    "transformers path's), bf16, auto (bf16 when this host's bf16 matmul is >= 2x fp32, as "
    "`autorl engine prepare` measured it). Recorded in the manifest.",
)
@click.option(
    "--agent-engine",
    type=click.Choice(["auto", "vllm", "none"]),
    help="The inference engine in the agent's runtime, for its own rollouts (docs/engine.md): "
    "auto (vLLM CPU when built; the default), vllm (an error when not built), none.",
)
@click.option("--task-option", multiple=True, metavar="KEY=VALUE", help="Passed to the task.")
@click.option("--agent-option", multiple=True, metavar="KEY=VALUE", help="Passed to the agent.")
@click.option(
    "--driver-option",
    multiple=True,
    metavar="KEY=VALUE",
    help="Passed to the driver backend (base_url, timeout_s, max_attempts, api_key_env...).",
)
@click.option(
    "--evaluator-option",
    multiple=True,
    metavar="KEY=VALUE",
    help="Overrides the evaluator config.",
)
@click.option(
    "--keep-checkpoints",
    is_flag=True,
    default=None,
    help="Keep copies of submitted checkpoints.",
)
@click.option("--quiet", is_flag=True, help="Print only the final summary.")
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path),
    help="Finish RUN_DIR, a run whose harness stopped: grade what the agent submitted, report.",
)
def run(config_path: Path | None, quiet: bool, resume_dir: Path | None, **flags: Any) -> None:
    """Run an agent on a task: baseline, agent phase under budget, grading, report.

    With no options: the embedded default (task webshop on its offline catalogue, agent
    scripted: SFT on demonstrations then online GRPO, model smollm2-135m), offline on CPU.
    """
    from autorl.config import load_config

    if resume_dir is not None:
        given = sorted(k for k, v in flags.items() if v not in (None, (), False))
        if config_path is not None or given:
            from autorl.errors import ConfigError

            raise ConfigError(
                "--resume takes no other run options: the run's manifest holds its config",
                hint=f"drop {', '.join('--' + k.replace('_', '-') for k in given) or '--config'}",
            )
        from autorl_runner.run import resume

        _report(resume(resume_dir, quiet=quiet))
        return
    overrides: dict[str, Any] = {}
    budget: dict[str, Any] = {}
    raw_budget = flags.pop("budget")
    for key in (
        "task",
        "agent",
        "model",
        "driver",
        "seed",
        "runs_dir",
        "run_id",
        "sandbox",
        "device",
        "engine",
        "engine_precision",
        "agent_engine",
        "keep_checkpoints",
    ):
        value = flags.get(key)
        if value is not None:
            overrides[key] = value
    if flags.get("reports"):
        overrides["reports"] = list(flags["reports"])
    if flags.get("max_submissions") is not None:
        budget["max_submissions"] = flags["max_submissions"]
    for flag, key in (
        ("task_option", "task_options"),
        ("agent_option", "agent_options"),
        ("driver_option", "driver_options"),
        ("evaluator_option", "evaluator_options"),
    ):
        if flags.get(flag):
            overrides[key] = parse_options(flags[flag], "--" + flag.replace("_", "-"))
    if raw_budget is not None:
        budget["wall_seconds"] = parse_duration(raw_budget)
    if budget:
        overrides["budget"] = budget
    _report(_execute(load_config(config_path, overrides), quiet))


def _execute(config: Any, quiet: bool) -> Any:
    from autorl_runner.engine import apply_engine
    from autorl_runner.run import TERMINATED, Run, terminate_as_interrupt

    apply_engine(config)  # the model layer (autorl-hf) reads them at each evaluation
    engine = Run(config, quiet=quiet)
    try:
        with terminate_as_interrupt():
            return engine.execute()
    except KeyboardInterrupt:
        if not engine.run_dir.is_dir():  # stopped before the run existed: nothing to resume
            raise SystemExit(130) from None
        _interrupted(engine.run_dir, f"autorl run --resume {engine.run_dir}")
        raise SystemExit(143 if TERMINATED.is_set() else 130) from None


def _interrupted(run_dir: Path, resume: str) -> None:
    """Where an interrupted run stands, and the one command that finishes it; or, when the
    signal came after the run had recorded its end (a campaign stopping as its last runs
    exit), that it ended, as its ``run.json`` says."""
    report = run_dir / "report" / "report.md"
    status = _recorded_status(run_dir)
    if status in ENDED:
        click.echo(
            f"\nstopped after run {run_dir.name} had ended: it is recorded as {status} in "
            f"{run_dir}\n" + (f"report: {report}" if report.is_file() else ""),
            err=True,
        )
        return
    click.echo(
        f"\ninterrupted: run {run_dir.name} is recorded as interrupted in {run_dir}\n"
        + (f"report (so far): {report}\n" if report.is_file() else "")
        + f"to grade what it submitted and finish it: {resume}",
        err=True,
    )


ENDED = ("completed", "failed")
"""The statuses a run records at its end (the only ones shown from its ``run.json``)."""


def _recorded_status(run_dir: Path) -> str | None:
    """``run.json``'s status, None when there is none to read."""
    import json

    try:
        status = json.loads((run_dir / "run.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        return None
    return status if isinstance(status, str) else None


def _report(outcome: Any) -> None:
    """The run's result on one line: under ``sealed`` the selected checkpoint's sealed test
    score against the baseline on the same split, with the dev best beside it; under
    ``reference`` the best held-out score, as the paper reports it."""
    improvement = outcome.improvement
    delta = "n/a" if improvement is None else f"{improvement:+.2f}"
    best = "none" if outcome.best_score is None else f"{outcome.best_score:.2f}"
    if getattr(outcome, "protocol", "reference") == "sealed":
        base = outcome.score_baseline
        score = "none" if outcome.score is None else f"{outcome.score:.2f}"
        se = "" if getattr(outcome, "score_se", None) is None else f" (SE {outcome.score_se:.1f})"
        line = (
            f"baseline {'n/a' if base is None else f'{base:.2f}'} (test), score {score}{se} "
            f"(sealed test of the selected checkpoint; dev best {best}), improvement {delta}"
        )
    else:
        line = f"baseline {outcome.baseline_score:.2f}, best {best}, improvement {delta}"
    click.echo(
        f"run {outcome.run_id}: {line} (ended by {outcome.end_reason})\n"
        f"report: {outcome.run_dir / 'report' / 'report.md'}"
    )


@click.command()
@click.option("--task", "tasks", multiple=True, help="Task(s) to prepare (default: webshop).")
@click.option("--model", "models", multiple=True, help="Model(s) to fetch and convert.")
def prepare(tasks: tuple[str, ...], models: tuple[str, ...]) -> None:
    """Fill the caches (task data, converted models) so later runs need no network."""
    from autorl.config import DEFAULT_MODEL, DEFAULT_TASK
    from autorl.paths import cache_dir, task_cache_dir
    from autorl.registry import get_registry
    from autorl.types import TaskContext
    from autorl_runner.run import resolve_model

    registry = get_registry()
    for name in tasks or (DEFAULT_TASK,):
        task = registry.create("task", name)
        version = str(getattr(task, "version", "0"))
        # the folder a default run (seed 0, no task options) prepares into
        prepared = task.prepare(TaskContext(cache_dir=task_cache_dir(task.name, version, 0, {})))
        click.echo(f"task {name}: {prepared.split} ready")
    for name in models or (DEFAULT_MODEL,):
        info = resolve_model(registry, name).materialize(cache_dir("models"))
        click.echo(f"model {name}: {info.path}")
