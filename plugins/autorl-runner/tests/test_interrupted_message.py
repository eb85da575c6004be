"""What `autorl run` says when a signal stops it: the run's own record decides (a campaign's
SIGTERM can arrive after a run recorded `completed`, while its process exits; it said
"recorded as interrupted" then, against its run.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from autorl_runner.cli import _interrupted


def stopped(tmp_path: Path, capsys: pytest.CaptureFixture[str], run: dict | None) -> str:
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    if run is not None:
        (run_dir / "run.json").write_text(json.dumps(run))
    _interrupted(run_dir, f"autorl run --resume {run_dir}")
    return capsys.readouterr().err


@pytest.mark.parametrize("run", [None, {"status": "running"}, {"status": "interrupted"}])
def test_a_run_stopped_before_its_end_is_said_interrupted_with_the_resume_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run: dict | None
) -> None:
    said = stopped(tmp_path, capsys, run)
    assert "recorded as interrupted" in said and "autorl run --resume" in said


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_a_run_stopped_after_its_end_is_said_as_recorded_and_not_resumable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status: str
) -> None:
    said = stopped(tmp_path, capsys, {"status": status, "end_reason": "agent_exit"})
    assert f"recorded as {status}" in said
    assert "interrupted" not in said and "--resume" not in said
