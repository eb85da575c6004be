"""The basic report renders real files from run directories written in the engine's format."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, ClassVar

import pytest
from autorl_report_basic.report import BasicReport
from autorl_testing import ReportConformance
from autorl_testing.runs import write_run_dir

from autorl.errors import AutorlError

BASE_HASH = "sha256:" + "b" * 64


def write_run(
    root: Path,
    entries: list[dict[str, Any]],
    *,
    agent: str = "react",
    driver: str | None = "openai/gpt-5.2",
    finished: bool = True,
) -> Path:
    config = {
        "task": "gsm8k",
        "agent": agent,
        "driver": driver,
        "model": "smollm2-135m",
        "seed": 1,
        "budget": {"wall_seconds": 3600, "max_submissions": 8},
        "sandbox": "local",
        "reports": ["basic"],
    }
    run = {
        "status": "completed",
        "started": "2026-01-02T03:04:06Z",
        "ended": "2026-01-02T04:04:06Z",
        "agent_seconds": 3600,
        "budget_seconds": 3600,
        "end_reason": "deadline",
        "agent_exit_code": None,
        "error": None,
    }
    return write_run_dir(
        root / "20260102-030405-gsm8k",
        config=config,
        entries=entries,
        baseline={"score": 4.0, "n": 200, "metrics": {}, "cached": False, "seconds": 30},
        run=run if finished else None,
        versions={"autorl": "0.1.0", "autorl-task-gsm8k": "0.1.0"},
        hashes={"train": "sha256:t", "eval": "sha256:e", "base_model": BASE_HASH},
        task={"name": "gsm8k", "version": "1", "split": "offline-200", "metric": "accuracy"},
    )


def sub(sid: int, minute: float, status: str, **fields: Any) -> list[dict[str, Any]]:
    at = minute * 60
    first = {
        "submission_id": sid,
        "status": "received",
        "time": f"T{sid}",
        "elapsed_s": at,
        "model_path": f"output/v{sid}",
        "code_revision": f"{sid:040x}",
    }
    last = {"submission_id": sid, "status": status, "elapsed_s": at + 40, **fields}
    return [first, last]


def busy_run(root: Path) -> list[dict[str, Any]]:
    return [
        *sub(1, 5, "scored", score=4.0, copy_of_base=True, weight_hash=BASE_HASH),
        *sub(2, 12, "failed", reason="config.json missing in output/v2 | add it"),
        *sub(3, 20, "scored", score=9.5, weight_hash="sha256:" + "1" * 64),
        *sub(4, 26, "duplicate", duplicate_of=3, score=9.5, weight_hash="sha256:" + "1" * 64),
        *sub(5, 41, "scored", score=7.0, weight_hash="sha256:" + "2" * 64),
        *sub(6, 55, "scored", score=15.5, weight_hash="sha256:" + "3" * 64),
        *sub(7, 58, "failed", reason="evaluation failed:\nRuntimeError: CUDA out of memory"),
    ]


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


def test_render_writes_the_three_files(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, busy_run(tmp_path))
    out = run_dir / "report"
    paths = BasicReport().render(run_dir, out)
    assert [p.name for p in paths] == ["summary.json", "report.md", "score_over_time.png"]
    assert all(p.parent == out for p in paths)

    data = json.loads((out / "summary.json").read_text())
    assert (data["baseline_score"], data["best_score"], data["improvement"]) == (4.0, 15.5, 11.5)
    assert data["process_metrics"]["copy_model_count"] == 1
    assert data["process_metrics"]["valid_submission_rate"] == pytest.approx(5 / 7, abs=1e-4)
    assert [row["id"] for row in data["submissions"]] == [1, 2, 3, 4, 5, 6, 7]

    width, height = png_size(out / "score_over_time.png")
    assert width > 600 and height > 400
    assert not list(out.glob("*.tmp*")), "temporary files left behind"


def test_markdown_content(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, busy_run(tmp_path))
    BasicReport().render(run_dir, run_dir / "report")
    md = (run_dir / "report" / "report.md").read_text()
    for expected in (
        "# autorl run `20260102-030405-gsm8k`",
        "| task | gsm8k (version 1, split offline-200, metric accuracy) |",
        "| driver | openai/gpt-5.2 |",
        "| budget | 1.00 h wall clock, 8 submissions |",
        "| versions | autorl 0.1.0, autorl-task-gsm8k 0.1.0 |",
        "| baseline | 4.00 |",
        "| best valid submission | 15.50 |",
        "| improvement | +11.50 |",
        "| 6 | 55.0 min | scored | 15.50 | +11.50 |",
        "copy of the base model",
        "same weights as #3",
        "config.json missing in output/v2 \\| add it",  # pipes escaped inside a table cell
        "evaluation failed: RuntimeError: CUDA out of memory",  # newline flattened
        "| monotonic ratio | 75% |",
        "| copies of the base model | 1 |",
        "End reason: **deadline**",
        "![score over time](score_over_time.png)",
    ):
        assert expected in md, f"missing from report.md: {expected!r}"
    assert "no LLM drove this run" not in md


def test_the_improvement_is_set_against_the_evaluators_noise(tmp_path: Path) -> None:
    entries = sub(1, 5, "scored", score=64.0, metrics={"score_se": 4.0})
    run_dir = write_run(tmp_path, entries)
    baseline = {"score": 4.0, "n": 200, "metrics": {"score_se": 3.0}, "cached": False}
    (run_dir / "baseline.json").write_text(json.dumps(baseline))
    BasicReport().render(run_dir, run_dir / "report")
    md = (run_dir / "report" / "report.md").read_text()
    assert "| noise (standard error of the improvement) | ±5.00 |" in md
    assert "The improvement is 12.0 standard errors" in md
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["improvement_se"] == 5.0
    plain = write_run(tmp_path / "plain", busy_run(tmp_path))  # no score_se: no noise line
    BasicReport().render(plain, plain / "report")
    assert "standard error" not in (plain / "report" / "report.md").read_text()


def test_scripted_run_gets_a_note(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, [], agent="scripted", driver=None)
    BasicReport().render(run_dir, run_dir / "report")
    md = (run_dir / "report" / "report.md").read_text()
    assert "no LLM drove this run" in md
    assert "The agent made no submission." in md
    assert "| improvement | - |" in md


def test_run_in_progress_renders(tmp_path: Path) -> None:
    entries = [*sub(1, 3, "scored", score=6.0), sub(2, 9, "evaluating")[0]]
    run_dir = write_run(tmp_path, entries, finished=False)
    (run_dir / "submissions.jsonl").open("a").write('{"submission_id": 2, "sta')
    paths = BasicReport().render(run_dir, tmp_path / "out")
    md = paths[1].read_text()
    assert "The run has not ended" in md
    assert "## Problems reading the records" in md and "truncated last line" in md
    assert json.loads(paths[0].read_text())["status"] == "incomplete"


def test_not_a_run_dir_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(AutorlError, match="not an autorl run directory"):
        BasicReport().render(tmp_path, tmp_path / "out")


class TestBasicReportConformance(ReportConformance):
    plugin_module: ClassVar[str] = "autorl_report_basic.plugin"

    def run_dir(self, tmp_path: Path) -> Path | None:
        return write_run(tmp_path / "runs", busy_run(tmp_path))


def test_matplotlib_is_imported_only_while_rendering() -> None:
    from autorl_testing.helpers import heavy_modules_imported_by

    assert heavy_modules_imported_by("autorl_report_basic.report", ("matplotlib",)) == []


@pytest.mark.parametrize(
    ("scores", "baseline", "top"),
    [([41.0, 42.5], 40.0, 49.875), ([0.0], 0.0, 10.0), ([100.0], 90.0, 101.0), ([], None, 100.0)],
)
def test_the_score_axis_starts_at_zero(scores: list, baseline: float | None, top: float) -> None:
    """A 2-point gain on a zoomed axis looked like a climb; the axis starts at 0 always."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from autorl_report_basic.plot import _y_range

    fig, ax = plt.subplots()
    try:
        _y_range(ax, scores, baseline)
        assert ax.get_ylim() == pytest.approx((0.0, top))
    finally:
        plt.close(fig)


# agent-written text is data (issue #30, item 7) ----------------------------------------

HOSTILE_TEXT = (
    "\x1b]0;evil\x07\x1b[2K\r\nsubmission 97: scored 99.90 [/autorl][bold] "
    "<img src=x onerror=alert(1)> | a | b | `code` *em* _u_"
)


def test_hostile_reason_path_and_tool_name_are_inert_in_report_md(tmp_path: Path) -> None:
    entries = [
        *sub(1, 2, "failed", reason=f"not a regular file: output/v1/{HOSTILE_TEXT}.safetensors"),
        *sub(2, 4, "scored", score=7.0, weight_hash="sha256:" + "a" * 64),
    ]
    entries[0]["model_path"] = "output/" + HOSTILE_TEXT
    run_dir = write_run(tmp_path, entries)
    call = {
        "ts": "2026-01-02T03:05:00Z",
        "driver": "openai/gpt-5.2",
        "request": {"metadata": {"api": "chat"}},
        "response": {"tool_calls": [{"name": HOSTILE_TEXT}]},
        "error": {"type": "Upstream", "message": HOSTILE_TEXT},
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    (run_dir / "driver_calls.jsonl").write_text(json.dumps(call) + "\n")
    BasicReport().render(run_dir, run_dir / "report")
    md = (run_dir / "report" / "report.md").read_text()
    for raw in ("\x1b", "\x07", "\r", "<img", "[/autorl][bold]", "| a | b |", "`code`", "*em*"):
        assert raw not in md, raw
    assert all(not line.startswith("submission 97") for line in md.splitlines())
    row = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    assert "not a regular file" in row and "&lt;img src=x" in row
    assert row.count(" | ") == 8  # the nine cells of a submission row, none added
