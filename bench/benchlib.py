"""What the benchmark scripts share: the options every model benchmark takes, a registry model
materialised into the cache, and the JSON summary they print or write."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def registry_model(name: str) -> Path | None:
    """The local directory of registry model ``name`` (``autorl list model``), materialised
    into ``$AUTORL_CACHE/models``, or ``name`` itself when it is a directory; None after
    printing why when it cannot be had."""
    if Path(name).is_dir():
        return Path(name)
    from autorl.errors import AutorlError
    from autorl.paths import cache_dir
    from autorl.registry import get_registry

    try:
        return Path(get_registry().create("model", name).materialize(cache_dir("models")).path)
    except AutorlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def write_json(path: Path | None, summary: dict[str, Any]) -> None:
    """``--json PATH``: the numbers, for a script that compares runs."""
    if path is not None:
        path.write_text(json.dumps(summary, indent=2) + "\n")


def bench_parser(doc: str, model: str) -> argparse.ArgumentParser:
    """A model benchmark's parser: described by the first line of ``doc`` (its docstring), with
    ``--model`` (a registry name or a directory, ``model`` by default)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--model", default=model, help=f"registry name or a directory ({model})")
    return parser


def parse_model_args(
    parser: argparse.ArgumentParser, argv: list[str] | None
) -> tuple[argparse.Namespace, Path | None]:
    """:func:`parse_bench_args`, then the model materialised: ``(args, its directory)``, the
    directory None when it cannot be had."""
    args = parse_bench_args(parser, argv)
    return args, registry_model(args.model)


def parse_bench_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Add the options every model benchmark takes (``--seed``, ``--json``) and parse ``argv``."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    return parser.parse_args(argv)


def report(path: Path | None, result: dict[str, Any]) -> None:
    """Print the numbers as JSON, and write them to ``--json PATH`` when given."""
    print(json.dumps(result, indent=2))
    write_json(path, result)


def report_medians(
    times: dict[str, list[float]], slow: str, fast: str, path: Path | None, digits: int = 2
) -> float:
    """Print each way's median seconds a step; write the medians and ``slow``/``fast`` (the
    speed-up, returned) to ``--json PATH``."""
    for name, values in times.items():
        print(f"{name:<24} median {statistics.median(values):6.{digits}f} s a step  {values}")
    ratio = statistics.median(times[slow]) / statistics.median(times[fast])
    write_json(path, {**{k: statistics.median(v) for k, v in times.items()}, "ratio": ratio})
    return ratio


def rollout_eval(model_dir: Path, prepared: Any, work: Path, seed: int = 0, **config: Any) -> Any:
    """The rollout evaluator's result for ``model_dir`` on a prepared interactive task, its
    options the task's with ``config`` over them."""
    from autorl_evaluator_rollout.contract import INTERACTIVE
    from autorl_evaluator_rollout.evaluator import RolloutEvaluator

    from autorl.contracts import load_contract
    from autorl.types import EvalRequest

    return RolloutEvaluator().evaluate(
        EvalRequest(
            model_dir=model_dir,
            eval_path=prepared.eval_path,
            config={**prepared.evaluator_config, **config},
            work_dir=work,
            seed=seed,
            contract=load_contract(INTERACTIVE, prepared.contract),
        )
    )
