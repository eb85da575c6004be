"""A live grading server over a throwaway workspace, for testing agents and the API itself.

The evaluation function is deterministic (score = 20 + submission id) so tests can assert the
API's behaviour; evaluators are tested on their own with real models.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from autorl.checkpoints import CheckpointInfo
from autorl.engine.budget import BudgetClock
from autorl.engine.records_io import SubmissionLog


class LiveGrader:
    """The real GradingService behind the real HTTP app on 127.0.0.1."""

    def __init__(self, root: Path, wall_seconds: float = 600, max_submissions: int = 5) -> None:
        from autorl.grading.app import create_app
        from autorl.grading.server import GradingServer
        from autorl.grading.service import GradingService

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
        self.release.wait(30)  # tests hold evaluations to observe queued states
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
