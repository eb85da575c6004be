"""The ``api`` grader the engine builds through the registry; FastAPI and uvicorn are imported
only when a run serves its API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl_grading.checkpoints import apparent_size, checkpoint_size_limit, hash_tree, hash_weights
from autorl_grading.history import CodeHistory
from autorl_grading.instructions import instructions
from autorl_grading.service import GradingService


class Grading:
    name = "api"

    def fingerprint(self, model_dir: Path) -> tuple[str, str]:
        return hash_weights(model_dir), hash_tree(model_dir)

    def files_hash(self, directory: Path) -> str:
        return hash_tree(directory)

    def code_history(self, git_dir: Path, work_tree: Path) -> CodeHistory:
        return CodeHistory(git_dir, work_tree)

    def service(self, *, base_model: Path, **settings: Any) -> GradingService:
        """A checkpoint may be a few times the base model's size (``checkpoint_size_limit``)."""
        base_bytes = apparent_size(base_model)
        return GradingService(
            max_checkpoint_bytes=checkpoint_size_limit(base_bytes),
            base_model_bytes=base_bytes,
            base_dir=base_model,
            **settings,
        )

    def serve(
        self, service: GradingService, *, token: str, unix_socket: Path, on_refused: Any = None
    ) -> Any:
        from autorl_grading.app import create_app
        from autorl_grading.server import GradingServer

        app = create_app(service, token, on_refused=on_refused)
        return GradingServer(app, unix_socket=unix_socket).start()

    def instructions(self, *, url: str, max_submissions: int, protocol: str) -> dict[str, str]:
        return instructions(url=url, max_submissions=max_submissions, protocol=protocol)
