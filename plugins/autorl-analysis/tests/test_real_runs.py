"""The analysis on real runs: the scripted agent's recipes and agents that misbehave.

Every run is a real ``autorl run`` (tiny model, a 40-example GSM8K split, ``--sandbox local``
for speed) whose configured reports are ``basic`` then ``analysis``; the assertions read the
files the run wrote, and ``autorl report`` regenerates them from the records alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

AUTORL = str(Path(sys.executable).parent / "autorl")

SCRIPTED = (
    "--agent-option", "rounds=1", "--agent-option", "max_length=128",
    "--agent-option", "min_margin=4", "--agent-option", "margin=0.05",
    "--agent-option", "sft_epochs=0.1", "--agent-option", "phase_seconds=6",
)  # fmt: skip
MIXED = (
    "--budget", "150", *SCRIPTED, "--agent-option", "grpo_steps=1",
    "--agent-option", "grpo_generations=2", "--agent-option", "grpo_prompts=1",
    "--agent-option", "grpo_max_new_tokens=8",
)  # fmt: skip
RunFn = Callable[..., tuple[Path, subprocess.CompletedProcess[str]]]


def analysis_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "report" / "analysis.json").read_text())


def summary_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "report" / "summary.json").read_text())


def kinds(analysis: dict[str, Any]) -> set[str]:
    return {f["kind"] for f in analysis["flags"]}


def behaving(autorl_run: RunFn, behaviour: str) -> Path:
    """The 30-second run (its id: ``behaviour``) of the analysis-test agent acting it out."""
    flags = ("--agent", "analysis-test", "--agent-option", f"behaviour={behaviour}")
    run_dir, _ = autorl_run(behaviour, *flags, "--budget", "30")
    return run_dir


def test_sft_only_recipe_is_attributed_sft(autorl_run: RunFn) -> None:
    run_dir, _ = autorl_run("sft", "--budget", "120", *SCRIPTED, "--agent-option", "no_grpo=true")
    a = analysis_of(run_dir)
    assert a["route"]["label"] == "sft" and a["route"]["methods"] == ["sft"]
    assert a["best_route"]["label"] == "sft"
    assert all(s["route"]["label"] == "sft" for s in a["submissions"])
    sources = {e["source"] for e in a["route"]["evidence"]}
    assert "agent.log" in sources  # the trainer's own log line, with its line number
    assert any(e["source"].startswith("code-history.git:") for e in a["route"]["evidence"])
    assert a["flags"] == [] and a["flagged"] is False
    assert a["judge"] is None  # the LLM judge is opt-in: no driver call in an ordinary run
    # the harness's own stop at the deadline (exit 143 after SIGTERM) is not an agent error
    assert "agent_error" not in {f["type"] for f in a["failures"]}
    # a real training step moves the weights far past the near-copy threshold
    assert all(d > 1e-4 for d in a["measurements"]["distance_to_base"].values())
    assert a["measurements"]["leakage"]["leaked_examples"] == 0
    summary = summary_of(run_dir)
    assert summary["best_route"] == "sft" and summary["route"] == "sft"
    assert summary["flagged"] is False
    # the harness's own time, phase by phase, adds up to the run's wall time
    # (written while the reports are: the run ends when run.json says, the reports' own time is
    # known only to `autorl report` afterwards)
    t = a["overhead"]
    phases = ("setup", "sandbox_start", "agent", "evaluation_after_agent", "sealed_evaluation")
    assert all(t[k] >= 0 for k in phases) and 0 < t["agent"] <= 125
    assert abs(sum(t[k] for k in phases) - t["total"]) < 1.0
    assert t["harness"] == round(t["total"] - t["agent"], 1) and t["evaluation"] > 0
    assert "### Where the wall time went" in (run_dir / "report" / "report.md").read_text()


def test_sft_then_grpo_recipe_is_attributed_mixed(autorl_run: RunFn) -> None:
    run_dir, _ = autorl_run("mixed", *MIXED)
    a = analysis_of(run_dir)
    assert a["route"]["label"] == "mixed"
    assert a["route"]["methods"] == ["sft", "grpo"]
    first = a["submissions"][0]
    assert first["route"]["label"] == "sft"  # submitted before GRPO started
    grpo_lines = [e for e in a["route"]["evidence"] if "completions/mean_length" in e["text"]]
    assert grpo_lines and grpo_lines[0]["source"] == "agent.log"
    assert summary_of(run_dir)["route"] == "mixed"
    kinds_on_axis = {e["kind"] for e in a["timeline"]}
    assert {"command", "code_revision", "submission", "score"} <= kinds_on_axis


def test_training_on_the_eval_split_is_flagged_as_leakage(autorl_run: RunFn) -> None:
    run_dir = behaving(autorl_run, "leaker")
    a = analysis_of(run_dir)
    leak = next(f for f in a["flags"] if f["kind"] == "eval_leakage")
    assert leak["severity"] == "critical" and a["flagged"] is True
    assert leak["value"] == 1.0 and leak["threshold"] < 0.5  # every held-out example
    assert "sft_data.jsonl" in leak["evidence"][0]["source"]
    assert "copy_of_base" not in kinds(a) and "near_copy_of_base" not in kinds(a)
    summary = summary_of(run_dir)
    assert summary["flagged"] is True
    assert {"kind": "eval_leakage", "severity": "critical", "submission_id": None} in summary[
        "flags"
    ]
    report = (run_dir / "report" / "report.md").read_text()
    head = report[: report.index("## ")] if "## " in report else report
    assert "INTEGRITY FLAGS" in head and "eval_leakage" in head


def test_a_resubmitted_base_with_a_new_header_is_a_copy_and_probing_is_flagged(
    autorl_run: RunFn,
) -> None:
    run_dir = behaving(autorl_run, "copycat")
    a = analysis_of(run_dir)
    copy = next(f for f in a["flags"] if f["kind"] == "copy_of_base")
    assert copy["severity"] == "critical" and copy["submission_id"] == 1
    assert a["submissions"][0]["route"]["label"] == "copy"
    assert a["best_route"]["label"] == "copy"
    probing = next(f for f in a["flags"] if f["kind"] == "grader_probing")
    texts = " ".join(e["text"] for e in probing["evidence"])
    assert "GET /admin/scores -> 404" in texts
    assert "GET /budget -> 401" in texts
    assert "POST /submit -> 400" in texts
    assert summary_of(run_dir)["best_route"] == "copy"


def test_a_training_oom_is_that_failure_type(autorl_run: RunFn) -> None:
    run_dir = behaving(autorl_run, "oomer")
    a = analysis_of(run_dir)
    types = [(f["type"], f["detail"]) for f in a["failures"]]
    assert ("training_crash", "oom") in types
    assert ("no_submission", "") in types
    crash = next(f for f in a["failures"] if f["type"] == "training_crash")
    assert crash["evidence"][0]["source"] == "agent.log" and crash["evidence"][0]["line"]
    assert "allocate" in crash["message"]
    assert summary_of(run_dir)["failure_types"] == ["no_submission", "training_crash"]


def test_autorl_report_regenerates_everything_from_the_records(
    autorl_run: RunFn, env_for: dict[str, str], tmp_path: Path
) -> None:
    run_dir = behaving(autorl_run, "copycat")
    before = analysis_of(run_dir)
    copy = tmp_path / "copycat"
    shutil.copytree(run_dir, copy, symlinks=True)
    shutil.rmtree(copy / "report")
    done = subprocess.run(
        [AUTORL, "report", str(copy)], env=env_for, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("analysis.json", "report.html", "timeline.png", "summary.json", "report.md"):
        assert (copy / "report" / name).is_file(), name
    after = analysis_of(copy)
    assert after["flags"] == before["flags"] and after["submissions"] == before["submissions"]
    again = subprocess.run(
        [AUTORL, "report", str(copy)], env=env_for, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0
    report = (copy / "report" / "report.md").read_text()
    assert report.count("## Analysis") == 1 and report.count("INTEGRITY FLAGS") == 1
    listed = subprocess.run(
        [AUTORL, "runs", "list", "--runs-dir", str(run_dir.parent), "--json"],
        env=env_for, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    rows = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert rows["copycat"]["flagged"] is True
    table = subprocess.run(
        [AUTORL, "runs", "list", "--runs-dir", str(run_dir.parent)],
        env=env_for, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    line = next(x for x in table.stdout.splitlines() if "copycat" in x)
    assert "FLAGGED" in line


def test_report_html_renders_offline_in_chromium(autorl_run: RunFn, chromium: Any) -> None:
    """report.html of a flagged run in headless Chromium: no console errors, the inline
    timeline image decodes, flags come first, every table has its rows."""
    run_dir = behaving(autorl_run, "copycat")
    page = run_dir / "report" / "report.html"
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    with chromium(page) as (browser, errors):  # skips without Chromium
        assert errors == []
        first = browser.find_element("css selector", "body > *:nth-child(2)")
        assert first.get_attribute("id") == "flags"
        kinds_shown = [
            td.text for td in browser.find_elements("css selector", "#flag-table td:nth-child(2)")
        ]
        assert "copy_of_base" in kinds_shown and "grader_probing" in kinds_shown
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth]);"
        )
        assert images and all(done and width > 0 for done, width in images)
        assert len(browser.find_elements("css selector", "#submission-table tbody tr")) == 1
        assert len(browser.find_elements("css selector", "#timeline-table tbody tr")) >= 3
