"""Issue #34's rows about campaigns, each checked without running a cell (the kill test with
real runs is test_campaign_e2e.py):

- `autorl campaign status` after the campaign process died: running cells whose runs are gone
  say what their runs recorded, or interrupted; queued cells have no start time;
- the dry-run's estimate is measured (this campaign's cells, then `results.jsonl`, then a
  documented default) and a partly finished campaign's dry-run plans only what `--resume` runs;
- `include:` at the top level names where it belongs, and the typo inside it;
- `autorl campaign run missing.yaml` names the campaign file, not `--config`;
- Ctrl-C exits 130 and prints the `--resume` command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from autorl_campaign import estimate
from autorl_campaign.cli import campaign
from autorl_campaign.liveness import alive, child_path, this_process, write_child
from autorl_campaign.spec import load_campaign
from autorl_campaign.store import CampaignStore
from click.testing import CliRunner

from autorl.errors import ConfigError

CAMPAIGN = """\
task: gsm8k
model: tiny
sandbox: local
agent: scripted
task_options: {train_size: 20, eval_size: 4}
budget: {wall_seconds: 60}
campaign:
  name: trust
  executor: pool
  executor_options: {workers: 2}
axes:
  seed: [0, 1, 2]
"""


def write_run(run_dir: Path, run_json: dict) -> Path:
    run_dir.mkdir(parents=True)
    manifest = {"run_id": run_dir.name, "config": {"task": "gsm8k", "model": "tiny"}}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (run_dir / "run.json").write_text(json.dumps(run_json))
    return run_dir


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(campaign, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output + str(result.exception or "")


def test_status_after_the_campaign_process_died_says_what_the_runs_recorded(
    tmp_path: Path,
) -> None:
    """The store says running (its campaign was SIGKILLed); the runs say otherwise."""
    out = tmp_path / "camp"
    store = CampaignStore(out)
    cells = [
        {"cell_id": c, "position": i, "replicate": 0, "axes": {"seed": i}, "config": {}}
        for i, c in enumerate(("done", "dead", "alive", "waiting"))
    ]
    store.add_cells(cells)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store.set_meta(name="trust", runner_pid=dead.stdout.strip(), runner_started="1", runner_host="")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        runs = out / "runs"
        for cid, run_json, pid in (
            ("done", {"status": "completed", "end_reason": "agent_exit"}, gone.pid),
            ("dead", {"status": "running", "pid": gone.pid}, gone.pid),
            ("alive", {"status": "running", "pid": live.pid}, live.pid),
        ):
            run_dir = write_run(runs / f"{cid}-1", run_json)
            store.queue(cid, run_dir.name, run_dir)
            (out / "logs").mkdir(exist_ok=True)
            write_child(child_path(out / "logs", run_dir.name), run_dir.name, str(run_dir), pid,
                        "2026-01-01T00:00:00Z")  # fmt: skip
            store.start(cid, run_dir.name, run_dir)
        store.queue("waiting", "waiting-1", runs / "waiting-1")
        store.close()
        code, text = invoke("status", str(out), "--json")
        assert code == 0, text
        shown = json.loads(text)
        now = {c["cell_id"]: (c["status"], c["stored_status"]) for c in shown["cells"]}
        assert now == {
            "done": ("completed", "running"),
            "dead": ("interrupted", "running"),
            "alive": ("running", "running"),  # its process lives on
            "waiting": ("pending", "queued"),
        }
        assert not shown["running"]
        assert next(c for c in shown["cells"] if c["cell_id"] == "waiting")["started"] is None
        code, text = invoke("status", str(out))
        assert "1 running, 1 completed, 1 interrupted" in text.replace("1 pending, ", "")
        assert "autorl campaign run" in text and "--resume" in text
    finally:
        live.kill()
        live.wait()


def test_a_pid_is_alive_only_with_its_start_time() -> None:
    me = this_process()
    assert alive(me["pid"], me["created"]) is True
    assert alive(me["pid"], me["created"] - 100) is False  # a reused pid is another process
    assert alive(me["pid"], me["created"], "another-host") is None


def test_estimates_come_from_this_campaign_then_earlier_runs_then_a_default(
    tmp_path: Path,
) -> None:
    config = {"task": "gsm8k", "model": "tiny", "agent": "scripted", "budget": {"wall_seconds": 60}}
    history = estimate.History()
    default = estimate.cell_estimate(config, history)
    assert not default.measured and default.seconds == 60 + estimate.DEFAULT_HARNESS_S
    earlier = tmp_path / "results.jsonl"
    run = {"status": "completed", "task": "gsm8k", "model": "tiny", "agent": "scripted"}
    lines = [
        {**run, "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:00:50Z",
         "agent_seconds": 30.0, "budget_seconds": 60.0},
        {**run, "started": "2026-01-01T00:00:00Z", "ended": "2026-01-01T00:01:10Z",
         "agent_seconds": 40.0, "budget_seconds": 60.0},
        {**run, "status": "interrupted", "started": "2026-01-01T00:00:00Z",
         "ended": "2026-01-01T00:00:05Z", "agent_seconds": 1.0, "budget_seconds": 60.0},
    ]  # fmt: skip
    earlier.write_text("".join(json.dumps(line) + "\n" for line in lines))
    estimate.from_results([earlier], history)
    measured = estimate.cell_estimate(config, history)
    # agent 35 s (measured, not the 60 s budget) + harness 25 s + the process's start and exit
    assert measured.measured and measured.seconds == pytest.approx(35 + 25 + estimate.PROCESS_S)
    assert estimate.makespan([60, 60, 60], 2) == 120 and estimate.makespan([60, 60], 1) == 120


def test_the_dry_run_of_a_partly_finished_campaign_plans_only_what_resume_runs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trust.yaml"
    path.write_text(CAMPAIGN)
    out = tmp_path / "camp"
    camp = load_campaign(path, out_dir=out)
    store = CampaignStore(out)
    store.add_cells([c.store_row() for c in camp.cells])
    first = camp.cells[0].cell_id
    run_dir = write_run(out / "runs" / f"{first}-1", {"status": "completed"})
    store.start(first, run_dir.name, run_dir, "2026-01-01T00:00:00Z")
    store.finish(first, status="completed", results={"agent_seconds": 20.0},
                 ended="2026-01-01T00:00:45Z")  # fmt: skip
    store.close()
    code, text = invoke("run", str(path), "--dry-run", "--out", str(out))
    assert code == 0, text
    assert "3 cells, 2 left to run (what --resume runs)" in text
    assert "2 cell(s) to run" in text and "nothing was run" in text
    stamp = (out / "campaign.sqlite").stat().st_mtime_ns
    for cell in camp.cells[1:]:
        store = CampaignStore(out)
        store.start(cell.cell_id, "x", out / "runs" / "x")
        store.finish(cell.cell_id, status="completed")
        store.close()
    stamp = (out / "campaign.sqlite").stat().st_mtime_ns
    code, text = invoke("run", str(path), "--dry-run", "--out", str(out))
    assert "all finished or running, --resume would run none" in text
    assert "0 cell(s) to run" in text
    assert (out / "campaign.sqlite").stat().st_mtime_ns == stamp  # a dry run writes nothing


def test_include_at_the_top_level_names_where_it_belongs_and_the_typo_inside(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN + "include:\n  - {seed: 7, agnet: react}\n")
    with pytest.raises(ConfigError) as err:
        load_campaign(path)
    text = err.value.message
    assert str(path) in text
    assert (
        "'include' is a campaign key, written at the top level: it belongs under `campaign:`"
        in text
    )
    assert "'agnet' is not a run option (did you mean 'agent'?)" in text
    assert "Extra inputs" not in text and "pydantic" not in text


def test_a_missing_campaign_file_is_named_as_one(tmp_path: Path) -> None:
    code, text = invoke("run", str(tmp_path / "missing.yaml"))
    assert code != 0 and "campaign file not found" in text and "--config" not in text


def test_ctrl_c_exits_130_and_prints_the_resume_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autorl_campaign.runner

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(autorl_campaign.runner, "run_campaign", interrupted)
    path = tmp_path / "trust.yaml"
    path.write_text(CAMPAIGN)
    result = CliRunner().invoke(campaign, ["run", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 130, result.output
    assert f"autorl campaign run {path} --resume --out {tmp_path / 'o'}" in result.output
