"""`autorl run` end to end through the real CLI: tiny model, real training, real HTTP, report.

This is the run CI does on every submission (issue acceptance: `autorl run --model tiny`
completes within 2 minutes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from autorl_testing.runs import AUTORL, autorl_run, completed_summary

pytestmark = pytest.mark.e2e  # real `autorl run`s of the tiny model

HARNESS_RECORDS = {
    "manifest.json",
    "submissions.jsonl",
    "events.jsonl",
    "baseline.json",
    "run.json",
    "agent.log",
    "summary.json",
}


def environment_digest() -> dict:
    """:func:`installed_digest` of this venv in a process of its own, as a run computes it."""
    code = "import json; from autorl.digest import installed_digest as d; print(json.dumps(d()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("e2e")
    keys = {
        "OPENAI_API_KEY": "sk-fake-harness-key-123",
        "ANTHROPIC_API_KEY": "sk-ant-fake-harness-key-456",
    }
    started = time.monotonic()
    # the environment's digest around the run, as a fresh process sees it (this worker's own
    # sys.path may hold a test's fake .dist-info: 187 distributions here, 186 for the run)
    digests = [environment_digest()]
    done = autorl_run(root, "tiny", task="gsm8k", model="tiny", budget=50, env=keys, check=False)
    digests.append(environment_digest())
    return {
        "digests": digests,
        "proc": done,
        "seconds": time.monotonic() - started,
        "run_dir": root / "runs" / "tiny",
        "root": root,
    }


def test_tiny_run_completes_quickly_with_a_report(tiny_run: dict) -> None:
    proc = tiny_run["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "baseline" in proc.stdout and "improvement" in proc.stdout
    assert tiny_run["seconds"] < 180, tiny_run["seconds"]  # 2 min target, slack for CI noise
    run_dir = tiny_run["run_dir"]
    summary = completed_summary(run_dir)
    assert (run_dir / "report" / "report.md").read_text().strip()
    assert (run_dir / "report" / "score_over_time.png").stat().st_size > 1000
    run_info = json.loads((run_dir / "run.json").read_text())
    assert summary["comparable"] is True and summary["problems"] == []
    assert run_info["sandbox"]["name"] == "isolated" and run_info["sandbox"]["oom_kills"] == 0


def test_manifest_records_config_versions_and_hashes(tiny_run: dict) -> None:
    manifest = json.loads((tiny_run["run_dir"] / "manifest.json").read_text())
    assert manifest["config"]["model"] == "tiny"
    assert manifest["versions"]["autorl"]
    # the installed libraries' digest (docs/installing.md): this environment's, taken at the run
    assert manifest["lock"] in tiny_run["digests"] and manifest["lock"]["distributions"] > 50
    # eval: the dev half the agent's submissions are scored on; test: the sealed half
    assert set(manifest["hashes"]) == {"train", "eval", "test", "base_model", "base_model_files"}
    assert manifest["sandbox"]["name"] == "isolated" and manifest["sandbox"]["isolated"] is True
    assert "torch" in manifest["runtime"]["distributions"]
    assert all(v.startswith("sha256:") for v in manifest["hashes"].values())


def test_workspace_holds_no_harness_record_and_no_secret(tiny_run: dict) -> None:
    run_dir: Path = tiny_run["run_dir"]
    workspace = run_dir / "workspace"
    assert {p.name for p in workspace.iterdir()} >= {
        "code",
        "data",
        "models",
        "output",
        "description.md",
        "instructions.md",
    }
    assert (workspace / "models" / "base").is_symlink()
    log = [json.loads(line) for line in (run_dir / "submissions.jsonl").read_text().splitlines()]
    secrets = ["sk-fake-harness-key-123", "sk-ant-fake-harness-key-456"]
    for top in (workspace, run_dir / "home"):
        for path in top.rglob("*"):
            if path.is_symlink() or not path.is_file():
                continue
            assert path.name not in HARNESS_RECORDS, path
            if path.stat().st_size < 5_000_000:
                blob = path.read_bytes()
                for secret in secrets:
                    assert secret.encode() not in blob, path
    assert log, "no submissions recorded"
    assert not any((workspace / "data").glob("*eval*"))


def test_code_history_has_a_snapshot_per_submission(tiny_run: dict) -> None:
    run_dir: Path = tiny_run["run_dir"]
    revs = subprocess.run(
        ["git", "--git-dir", str(run_dir / "code-history.git"), "rev-list", "--all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    log = [json.loads(line) for line in (run_dir / "submissions.jsonl").read_text().splitlines()]
    # a submission is logged on receipt, then its snapshot's revision with its outcome; an
    # unchanged code/ tree is not committed again, so submissions may share a revision
    merged: dict[int, dict] = {}
    for entry in log:
        merged.setdefault(entry["submission_id"], {}).update(entry)
    assert len(merged) >= 1
    assert all(e.get("code_revision") in revs for e in merged.values()), merged
    assert len({e["code_revision"] for e in merged.values()}) <= len(revs)


def test_second_run_reuses_the_cached_baseline_and_local_is_not_comparable(
    tiny_run: dict,
) -> None:
    root: Path = tiny_run["root"]
    done = autorl_run(
        root, "again", task="gsm8k", model="tiny", budget=5, sandbox="local", timeout=300
    )
    baseline = json.loads((root / "runs" / "again" / "baseline.json").read_text())
    assert baseline["cached"] is True
    # the development sandbox says loudly, everywhere, that its score is not comparable
    assert "not a boundary" in done.stdout
    summary = json.loads((root / "runs" / "again" / "report" / "summary.json").read_text())
    assert summary["comparable"] is False and summary["sandbox"]["name"] == "local"
    assert any("not comparable" in p for p in summary["problems"])
    report = (root / "runs" / "again" / "report" / "report.md").read_text()
    assert "**NOT COMPARABLE.**" in report.splitlines()[2]
    results = [json.loads(x) for x in (root / "runs" / "results.jsonl").read_text().splitlines()]
    assert {r["run_id"]: r["comparable"] for r in results} == {"tiny": True, "again": False}


def test_quiet_prints_the_summary_and_nothing_else(tiny_run: dict) -> None:
    """``--quiet`` means quiet: no progress bars, no library warnings or loading bars on either
    stream, only the final summary (the baseline is cached by the first run here)."""
    root: Path = tiny_run["root"]
    done = autorl_run(root, "quiet", task="gsm8k", model="tiny", budget=5, quiet=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 2, done.stdout
    assert lines[0].startswith("run quiet: baseline") and lines[1].startswith("report: ")
    assert done.stderr.strip() == "", done.stderr[-2000:]


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    cases = [
        (["run", "--task", "gsm8kk"], "did you mean"),
        (["run", "--budget", "soon"], "not a duration"),
        (["run", "--agent", "nosuch"], "unknown agent"),
        (["run", "--model", str(tmp_path)], "not a Hugging Face model directory"),
    ]
    bad = tmp_path / "bad.toml"
    bad.write_text("[budget]\nwall_seconds = 'x'\n")
    cases.append((["run", "--config", str(bad)], "budget.wall_seconds"))
    for args, needle in cases:
        done = subprocess.run(
            [AUTORL, *args, "--runs-dir", str(tmp_path / "runs")],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "AUTORL_CACHE": str(tmp_path / "cache")},
        )
        out = done.stdout + done.stderr
        assert done.returncode == 2, (args, out)
        assert needle in out, (args, out)
        assert "Traceback" not in out, (args, out)


def test_gpu_hours_budget_stops_the_agent(tmp_path: Path) -> None:
    """A run whose agent has GPUs meters their GPU-hours and stops the agent when they are
    spent; fake device lists stand in for NVML (GPU 0 busy 100 %), the grader stays on the CPU."""
    root = tmp_path
    cfg = root / "gpu.toml"
    cfg.write_text(
        'device = "cpu"\n[limits]\ngpus = [0]\n'
        "[budget]\nwall_seconds = 120\nmax_gpu_hours = 0.001\n"  # 3.6 s of a busy GPU
    )
    env = {
        **os.environ,
        "AUTORL_CACHE": str(root / "cache"),
        "HF_HUB_OFFLINE": "1",
        "AUTORL_GPU_PROBE": "autorl_testing.gpus:FakeProbe",
        "AUTORL_FAKE_GPUS": "0=100,1=0",
    }
    argv = [AUTORL, "run", "--config", str(cfg), "--task", "gsm8k", "--model", "tiny"]
    argv += ["--task-option", "train_size=20", "--task-option", "eval_size=8"]  # GPUs under test
    done = subprocess.run(
        [*argv, "--runs-dir", str(root / "runs"), "--run-id", "gpu"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run = json.loads((root / "runs" / "gpu" / "run.json").read_text())
    assert run["end_reason"] == "gpu_hours"
    assert run["agent_seconds"] < 60
    assert run["gpu_usage"]["gpus"] == [0] and run["gpu_usage"]["gpu_hours"] >= 0.001
    events = (root / "runs" / "gpu" / "events.jsonl").read_text()
    assert "gpu_budget_exhausted" in events
    report = (root / "runs" / "gpu" / "report" / "report.md").read_text()
    assert "GPU-hours budget was spent" in report and "0.001 GPU-hours" in report
    # a GPU the machine lacks fails before any work, with no run directory
    bad = subprocess.run(
        [*argv, "--runs-dir", str(root / "runs"), "--run-id", "nogpu"],
        env={**env, "AUTORL_FAKE_GPUS": "1=0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0 and "GPU 0 is not on this machine" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
    assert not (root / "runs" / "nogpu").exists()


def test_the_recipe_trains_under_deepspeed_in_the_sandbox(tmp_path: Path) -> None:
    """``--agent-option deepspeed=zero3 --agent-option processes=2``: the scripted agent's SFT
    (LoRA) runs as two DeepSpeed ZeRO-3 ranks (gloo over the sandbox's own loopback) inside the
    isolated sandbox, from the agent runtime, and its merged model is submitted and scored."""
    pytest.importorskip("deepspeed", reason="needs deepspeed (autorl-agent-scripted[deepspeed])")
    options = ["deepspeed=zero3", "processes=2", "rounds=1", "no-grpo=true", "phase_seconds=10"]
    # a generous budget as a guard, a fixed amount of training (the ranks' start-up alone took
    # ~60 s on a busy 2-core AMD host)
    autorl_run(tmp_path, "ds", task="gsm8k", model="tiny", budget=300, agent_option=options)
    log = (tmp_path / "runs" / "ds" / "agent.log").read_text()
    assert "sft (deepspeed zero3, 2 rank(s))" in log, log[-2000:]
    submissions = (tmp_path / "runs" / "ds" / "submissions.jsonl").read_text()
    assert '"status": "scored"' in submissions
