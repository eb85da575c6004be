"""Sealed scores, protocols and infrastructure failures in the campaign store and `autorl compare`
(issue #31).

Run directories are written by hand in the engine's format (run.json's ``scoring`` block and an
``infra_error`` end with its cause, as docs/reports.md describes them) and stored through the
runner's own ``record``, the path a real campaign takes from a finished run to the store.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from autorl_campaign.analysis import Options, compare_campaign
from autorl_campaign.runner import record
from autorl_campaign.store import CampaignStore
from autorl_testing.runs import write_run_dir
from click.testing import CliRunner

from autorl.cli.main import cli


def sealed_block(score: float, *, baseline: float = 40.0, gap: float = 3.0) -> dict[str, Any]:
    return {
        "protocol": "sealed",
        "selection": {"submission_id": 1, "rule": "best_dev"},
        "dev": {"best": score + gap, "selected": score + gap, "selected_se": 2.0, "n": 50},
        "test": {"selected": score, "selected_se": 2.0, "n": 50, "baseline": baseline},
        "score": score,
        "score_se": 2.0,
        "baseline": baseline,
        "baseline_se": 1.0,
        "improvement": score - baseline,
        "improvement_se": 2.24,
        "selection_gap": gap,
        "selection_gap_se": 2.83,
    }


def write_run(
    root: Path,
    run_id: str,
    *,
    dev_scores: tuple[float, ...] = (50.0,),
    block: dict[str, Any] | None = None,
    end_reason: str = "agent_exit",
    infra_cause: str | None = None,
) -> Path:
    """A finished run directory: dev baseline 42 (the agent saw it), the given dev scores."""
    entries = []
    for sid, score in enumerate(dev_scores, start=1):
        entries += [
            {"submission_id": sid, "status": "received", "elapsed_s": 10.0 * sid},
            {"submission_id": sid, "status": "scored", "score": score, "elapsed_s": 10.0 * sid},
        ]
    info: dict[str, Any] = {"status": "completed", "end_reason": end_reason, "agent_seconds": 60}
    if block is not None:
        info["scoring"] = block
    if infra_cause is not None:
        info["infra_cause"] = infra_cause
    return write_run_dir(
        root / run_id,
        config={"task": "gsm8k", "agent": "react", "model": "tiny", "seed": 0},
        entries=entries,
        baseline={"score": 42.0, "n": 50, "metrics": {"score_se": 1.5}},
        run=info,
        sandbox={"name": "isolated", "isolated": True},
        task={"name": "gsm8k"},
    )


def cell_row(position: int, agent: str, seed: int) -> dict[str, Any]:
    axes = {"agent": agent, "seed": seed}
    config = {"task": "gsm8k", "model": "tiny", **axes, "budget": {"wall_seconds": 60}}
    cid = f"{agent}-{seed}"
    return {"cell_id": cid, "position": position, "replicate": 0, "axes": axes, "config": config}


def store_runs(directory: Path, runs: dict[str, Path]) -> CampaignStore:
    """A store whose cells ran ``runs`` (cell id -> run directory), recorded by the runner."""
    store = CampaignStore(directory)
    store.set_meta(name="sealed-demo")
    rows = []
    for position, cid in enumerate(runs):
        agent, seed = cid.rsplit("-", 1)
        rows.append(cell_row(position, agent, int(seed)))
    store.add_cells(rows)
    for cid, run_dir in runs.items():
        finish(store, cid, run_dir)
    return store


def finish(store: CampaignStore, cid: str, run_dir: Path) -> str:
    store.start(cid, run_dir.name, run_dir)
    result = {"run_dir": str(run_dir), "run_id": run_dir.name, "returncode": 0, "tail": ""}
    return record(store, SimpleNamespace(cell_id=cid), result, None)


def compare(campaign_dir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["compare", str(campaign_dir), *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_the_store_holds_the_sealed_score_and_its_protocol(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "runs", "r1", dev_scores=(50.0, 53.0), block=sealed_block(47))
    store = store_runs(tmp_path / "camp", {"react-0": run_dir})
    row = store.cell("react-0")
    store.close()
    assert row is not None and row["status"] == "completed"
    assert (row["protocol"], row["score"], row["score_se"]) == ("sealed", 47.0, 2.0)
    assert (row["baseline"], row["baseline_se"], row["improvement"]) == (40.0, 1.0, 7.0)
    assert (row["best"], row["dev_baseline"]) == (53.0, 42.0)  # what the agent climbed and saw
    assert (row["selection_gap"], row["selection_gap_se"], row["selection_rule"]) == (
        3.0,
        2.83,
        "best_dev",
    )
    assert (row["selected_submission"], row["test_n"], row["dev_n"]) == (1, 50, 50)


def test_an_old_run_is_stored_as_reference_with_its_numbers(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "runs", "old", dev_scores=(50.0, 53.0))
    store = store_runs(tmp_path / "camp", {"react-0": run_dir})
    row = store.cell("react-0")
    store.close()
    assert row is not None
    assert (row["protocol"], row["score"], row["best"], row["baseline"], row["improvement"]) == (
        "reference",
        53.0,
        53.0,
        42.0,
        11.0,
    )
    assert (row["baseline_se"], row["selection_gap"]) == (1.5, None)


def test_compare_ranks_on_the_sealed_score_not_the_dev_best(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    store = store_runs(
        tmp_path / "camp",
        {
            # react climbs dev highest (60, 62) but its selected checkpoints test at 44 and 46
            "react-0": write_run(runs, "a", dev_scores=(60.0,), block=sealed_block(44, gap=16)),
            "react-1": write_run(runs, "b", dev_scores=(62.0,), block=sealed_block(46, gap=16)),
            "codex-0": write_run(runs, "c", dev_scores=(51.0,), block=sealed_block(50, gap=1)),
            "codex-1": write_run(runs, "d", dev_scores=(53.0,), block=sealed_block(52, gap=1)),
        },
    )
    try:
        comparison = compare_campaign(store, Options(n_resamples=999))
    finally:
        store.close()
    assert comparison.protocol == "sealed"
    groups = comparison.tables["groups"].set_index("label")
    assert groups.loc["react", "mean_score"] == 45.0 and groups.loc["codex", "mean_score"] == 51.0
    assert groups.loc["react", "mean_improvement"] == 5.0
    assert groups.loc["react", "mean_selection_gap"] == 16.0
    pass_at_k = comparison.tables["pass_at_k"]
    react_k2 = pass_at_k[(pass_at_k["label"] == "react") & (pass_at_k["k"] == 2)]
    assert react_k2["expected_best_improvement"].tolist() == [6.0]  # the sealed improvements
    paired = comparison.tables["paired"].iloc[0]
    assert abs(paired["mean_diff"]) == 6.0
    # the scaling curves follow the dev scores against the dev baseline (42): 60 - 42 = 18
    scaling = comparison.tables["scaling"]
    react_time = scaling[(scaling["label"] == "react") & (scaling["axis"] == "time")]
    assert react_time["mean"].max() == 19.0


def test_compare_refuses_to_rank_mixed_protocols(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    store = store_runs(
        tmp_path / "camp",
        {
            "react-0": write_run(runs, "a", block=sealed_block(44)),
            "react-1": write_run(runs, "b", block=sealed_block(46)),
            "codex-0": write_run(runs, "c", dev_scores=(51.0,)),  # no scoring block: reference
        },
    )
    store.close()
    code, out = compare(tmp_path / "camp")
    assert code == 2, out
    assert "Traceback" not in out
    flat = " ".join(out.split())
    assert "scored under different protocols" in flat
    assert "'reference' (1 cell(s): codex-0)" in flat
    assert "'sealed' (2 cell(s): react-0, react-1)" in flat
    assert "--protocol sealed" in flat  # the hint says how to compare within one protocol
    assert not (tmp_path / "camp" / "compare").exists()

    code, out = compare(tmp_path / "camp", "--protocol", "sealed", "--resamples", "999")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "protocol: sealed" in flat
    assert "only protocol 'sealed' is compared (--protocol); left out: 1 reference" in flat
    groups = pd.read_csv(tmp_path / "camp" / "compare" / "groups.csv")
    assert groups["label"].tolist() == ["react"] and groups["n"].tolist() == [2]


@pytest.mark.slow  # over 2 CPU-s: make test, not make check
def test_infra_error_cells_are_left_out_named_and_retried_as_a_new_attempt(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    crashed = write_run(
        runs,
        "codex-1-1",
        end_reason="infra_error",
        infra_cause="sandbox could not start: [bold]bwrap[/bold] <failed>",
    )
    store = store_runs(
        tmp_path / "camp",
        {
            "react-0": write_run(runs, "a", block=sealed_block(44)),
            "react-1": write_run(runs, "b", block=sealed_block(46)),
            "codex-0": write_run(runs, "c", block=sealed_block(50)),
            "codex-1": crashed,
        },
    )
    row = store.cell("codex-1")
    assert row is not None and row["status"] == "infra_error"
    assert row["error"] == "infra_error: sandbox could not start: [bold]bwrap[/bold] <failed>"
    store.close()

    code, out = compare(tmp_path / "camp", "--resamples", "999")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "1 infra_error" in flat
    assert "1 cell(s) ended infra_error" in flat and "not agent results" in flat
    assert "codex-1 (sandbox could not start: [bold]bwrap[/bold] <failed>)" in flat  # inert
    assert "Infrastructure failures" in flat
    out_dir = tmp_path / "camp" / "compare"
    groups = pd.read_csv(out_dir / "groups.csv").set_index("label")
    assert groups.loc["codex", "n"] == 1  # the infra_error cell is not an agent result
    infra = pd.read_csv(out_dir / "infra_errors.csv")
    assert infra[["cell_id", "attempt", "cell_status_now"]].values.tolist() == [
        ["codex-1", 1, "infra_error"]
    ]
    page = (out_dir / "index.html").read_text()
    assert 'id="infra-errors"' in page and "&lt;failed&gt;" in page and "<failed>" not in page

    # --resume runs it again: a new attempt in a new run directory, the old one kept
    store = CampaignStore(tmp_path / "camp")
    retried = write_run(runs, "codex-1-2", block=sealed_block(52))
    assert finish(store, "codex-1", retried) == "completed"
    row = store.cell("codex-1")
    attempts = store.attempts("codex-1")
    store.close()
    assert row is not None and (row["attempts"], row["run_dir"]) == (2, str(retried))
    assert (row["end_reason"], row["infra_cause"], row["error"]) == ("agent_exit", None, None)
    assert [(a["attempt"], a["status"], a["run_dir"]) for a in attempts] == [
        (1, "infra_error", str(crashed)),
        (2, "completed", str(retried)),
    ]
    assert crashed.is_dir()
    code, out = compare(tmp_path / "camp", "--resamples", "999")
    assert code == 0, out
    infra = pd.read_csv(out_dir / "infra_errors.csv")
    assert infra[["cell_id", "attempt", "cell_status_now"]].values.tolist() == [
        ["codex-1", 1, "completed"]
    ]
    groups = pd.read_csv(out_dir / "groups.csv").set_index("label")
    assert groups.loc["codex", "n"] == 2
    assert "ended infra_error" not in " ".join(out.split())  # no cell is left out any more


def test_an_older_store_gains_the_new_columns_and_reads_as_reference(tmp_path: Path) -> None:
    """A store written before sealed scoring: no protocol/score columns, no attempts table."""
    directory = tmp_path / "camp"
    directory.mkdir()
    with sqlite3.connect(directory / "campaign.sqlite") as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute(
            "CREATE TABLE cells (cell_id TEXT PRIMARY KEY, position INTEGER NOT NULL, "
            "replicate INTEGER NOT NULL, axes TEXT NOT NULL, config TEXT NOT NULL, task TEXT, "
            "agent TEXT, driver TEXT, model TEXT, seed INTEGER, status TEXT NOT NULL, "
            "attempts INTEGER NOT NULL DEFAULT 0, baseline REAL, best REAL, improvement REAL)"
        )
        db.execute(
            "CREATE TABLE submissions (cell_id TEXT NOT NULL, submission_id INTEGER NOT NULL, "
            "status TEXT, valid INTEGER, score REAL, score_se REAL, elapsed_s REAL, "
            "tokens_by_then INTEGER, cost_by_then REAL, PRIMARY KEY (cell_id, submission_id))"
        )
        for i, best in enumerate((44.0, 46.0)):
            db.execute(
                "INSERT INTO cells VALUES (?, ?, 0, ?, ?, 'gsm8k', 'react', NULL, 'tiny', ?, "
                "'completed', 1, 40.0, ?, ?)",
                (f"c{i}", i, json.dumps({"seed": i}), json.dumps({}), i, best, best - 40.0),
            )
    code, out = compare(directory, "--resamples", "999")  # read-only: no migration
    assert code == 0, out
    groups = pd.read_csv(directory / "compare" / "groups.csv")
    assert groups["mean_score"].tolist() == [45.0] and groups["mean_improvement"].tolist() == [5.0]
    assert "protocol: reference" in out
