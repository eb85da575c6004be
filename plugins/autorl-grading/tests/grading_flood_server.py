"""The real grading server in its own process with a low RLIMIT_NOFILE, for the flood tests.

``python grading_flood_server.py ROOT NOFILE MAX_CONNECTIONS``: serves a GradingService over
ROOT/workspace on 127.0.0.1 and on the unix socket ROOT/grader.sock, prints one JSON line (url,
token, limit); on ``stop`` on stdin stops, prints the seconds it took and the gate statistics.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from autorl_grading.app import create_app
from autorl_grading.server import GradingServer
from autorl_grading.service import GradingService
from autorl_runner.budget import BudgetClock
from autorl_runner.records_io import SubmissionLog


def grading_service(root: Path) -> GradingService:
    """A real GradingService over ROOT/workspace whose evaluation scores instantly."""
    clock = BudgetClock(600)
    clock.start()
    return GradingService(
        workspace=root / "workspace",
        storage=root / "submissions",
        log=SubmissionLog(root / "submissions.jsonl"),
        clock=clock,
        max_submissions=5,
        baseline_score=10.0,
        base_weight_hash="sha256:base",
        evaluate=lambda sid, ckpt, info: (20.0 + sid, {"n": 1}),
    )


def main() -> None:
    root, nofile, max_connections = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    service = grading_service(root)
    server = GradingServer(create_app(service, "secret-token"), unix_socket=root / "grader.sock")
    if max_connections:
        for gate in server.gates:
            gate.limit = max_connections
    server.start()
    print(json.dumps({"url": server.url, "limit": server.gates[1].limit}), flush=True)
    sys.stdin.readline()
    started = time.monotonic()
    server.stop()
    service.close()
    print(json.dumps({"stop_s": time.monotonic() - started, **server.stats()}), flush=True)


if __name__ == "__main__":
    main()
