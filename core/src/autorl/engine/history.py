"""Code history: a git repository outside the workspace that snapshots ``workspace/code``.

The repository lives in the run directory (``code-history.git``) with ``workspace/code`` as its
work tree, so the agent can neither see nor rewrite it. The work tree is the agent's, so git
runs with no hooks, no fsmonitor, no system or global config and no attributes-driven filters:
nothing the agent writes into ``code/`` (a ``.git`` of its own, ``.gitattributes``) makes the
harness's git run a program.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.attributesFile=/dev/null",
    "-c", "safe.directory=*",
    "-c", "protocol.allow=never",
    "-c", "submodule.recurse=false",
)  # fmt: skip


class CodeHistory:
    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self._lock = threading.Lock()
        self._env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_AUTHOR_NAME": "autorl",
            "GIT_AUTHOR_EMAIL": "autorl@localhost",
            "GIT_COMMITTER_NAME": "autorl",
            "GIT_COMMITTER_EMAIL": "autorl@localhost",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "HOME": str(git_dir),
        }
        self.available = self._git("init", "-q", "--template=") is not None
        if self.available:
            # keep checkpoints and caches the agent may drop into code/ out of history
            (git_dir / "info").mkdir(exist_ok=True)
            (git_dir / "info" / "exclude").write_text(
                "*.safetensors\n*.bin\n*.pt\n*.gguf\n__pycache__/\n"
            )

    def _git(self, *args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *SAFE_CONFIG, *args],
                env=self._env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    def snapshot(self, message: str) -> str | None:
        """Commit the current state of ``code/`` (even if unchanged); return the revision."""
        if not self.available:
            return None
        with self._lock:
            self._git("add", "-A", "--", ".")
            self._git("commit", "-q", "--allow-empty", "-m", message)
            return self._git("rev-parse", "HEAD")
