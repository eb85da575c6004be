"""Shared fixtures of the core's tests: real checkpoint directories and a live grading server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from autorl.checkpoints import CheckpointInfo
from autorl.engine.budget import BudgetClock
from autorl.engine.records_io import SubmissionLog
from autorl.grading.app import create_app
from autorl.grading.server import GradingServer
from autorl.grading.service import GradingService


def write_checkpoint(path: Path, seed: int = 0) -> Path:
    """A structurally valid full checkpoint (config, safetensors weights, tokenizer file)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    weights = np.random.default_rng(seed).standard_normal((4, 4)).astype("float32")
    save_file({"w": weights}, str(path / "model.safetensors"))
    (path / "tokenizer.json").write_text("{}")
    (path / "tokenizer_config.json").write_text("{}")
    return path


class Grader:
    """A live grading server over a real workspace, recording which checkpoints it evaluated."""

    def __init__(self, root: Path, wall_seconds: float = 600, max_submissions: int = 5) -> None:
        self.workspace = root / "workspace"
        (self.workspace / "output").mkdir(parents=True)
        (self.workspace / "code").mkdir()
        self.evaluated: list[str] = []
        self.release = threading.Event()
        self.release.set()
        self.clock = BudgetClock(wall_seconds)
        self.clock.start()
        self.log_path = root / "submissions.jsonl"
        self.service = GradingService(
            workspace=self.workspace,
            storage=root / "submissions",
            log=SubmissionLog(self.log_path),
            clock=self.clock,
            max_submissions=max_submissions,
            baseline_score=10.0,
            base_weight_hash="sha256:base",
            evaluate=self._evaluate,
        )
        self.token = "secret-token"
        self.server = GradingServer(create_app(self.service, self.token)).start()
        self.url = self.server.url

    def _evaluate(self, sid: int, ckpt: Path, info: CheckpointInfo) -> tuple[float, dict]:
        self.release.wait(30)
        self.evaluated.append(info.weight_hash)
        return 20.0 + sid, {"n": 1}

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def log(self) -> list[dict]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def close(self) -> None:
        self.server.stop()
        self.service.close()


@pytest.fixture
def grader(tmp_path: Path) -> Iterator[Grader]:
    g = Grader(tmp_path)
    yield g
    g.close()
