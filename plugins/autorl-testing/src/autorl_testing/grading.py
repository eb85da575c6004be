"""A live grading server over a throwaway workspace, for testing agents and the API itself.

The evaluation function is deterministic (score = 20 + submission id) so tests can assert the
API's behaviour; evaluators are tested on their own with real models.
"""

from __future__ import annotations

import json
import struct
import threading
import time
from pathlib import Path

from autorl_runner.budget import BudgetClock
from autorl_runner.records_io import SubmissionLog

from autorl.types import CheckpointInfo


def write_sparse_checkpoint(path: Path, tensor_bytes: int, data: bytes = b"") -> Path:
    """A valid checkpoint whose one tensor is ``tensor_bytes`` long but a hole on disk (the
    red-team's "10 GB" checkpoint that costs nothing to write); ``data`` opens the tensor."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    (path / "tokenizer.json").write_text("{}")
    entry = {"dtype": "U8", "shape": [tensor_bytes], "data_offsets": [0, tensor_bytes]}
    header = json.dumps({"w": entry}).encode()
    header += b" " * (-len(header) % 8)
    with (path / "model.safetensors").open("wb") as fh:
        fh.write(struct.pack("<Q", len(header)) + header + data)
        fh.truncate(8 + len(header) + tensor_bytes)
    return path


class LiveGrader:
    """The real GradingService behind the real HTTP app on 127.0.0.1."""

    def __init__(
        self,
        root: Path,
        wall_seconds: float = 600,
        max_submissions: int = 5,
        *,
        base_weight_hash: str = "sha256:base",
        max_checkpoint_bytes: int | None = None,
        base_model_bytes: int | None = None,
        max_body_bytes: int | None = None,
        intake_wait_s: float = 2.0,
        eval_seconds: float = 0.0,
        exclude_evaluation_time: bool = False,
    ) -> None:
        from autorl_grading.app import create_app
        from autorl_grading.server import GradingServer
        from autorl_grading.service import GradingService

        self.workspace = root / "workspace"
        (self.workspace / "output").mkdir(parents=True)
        (self.workspace / "code").mkdir()
        self.evaluated: list[str] = []
        self.release = threading.Event()
        self.release.set()
        self.clock = BudgetClock(wall_seconds)
        self.clock.start()
        self.eval_seconds = eval_seconds
        evaluate = self._evaluate
        if exclude_evaluation_time:  # what the engine does under evaluation_time = "excluded"
            evaluate = self.clock.excluding(evaluate)
        self.log_path = root / "submissions.jsonl"
        self.service = GradingService(
            workspace=self.workspace,
            storage=root / "submissions",
            log=SubmissionLog(self.log_path),
            clock=self.clock,
            max_submissions=max_submissions,
            baseline_score=10.0,
            base_weight_hash=base_weight_hash,
            evaluate=evaluate,
            max_checkpoint_bytes=max_checkpoint_bytes,
            base_model_bytes=base_model_bytes,
            intake_wait_s=intake_wait_s,
        )
        self.token = "secret-token"
        limits = {} if max_body_bytes is None else {"max_body_bytes": max_body_bytes}
        self.server = GradingServer(create_app(self.service, self.token, **limits)).start()
        self.url = self.server.url

    def _evaluate(self, sid: int, ckpt: Path, info: CheckpointInfo) -> tuple[float, dict]:
        self.release.wait(30)  # tests hold evaluations to observe queued states
        time.sleep(self.eval_seconds)
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
