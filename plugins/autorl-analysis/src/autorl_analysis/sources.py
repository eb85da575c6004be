"""Reading a run's records for the analysis: size-capped, no links followed, nothing executed.

Harness-owned files (``events.jsonl``, ``driver_calls.jsonl``, ``code-history.git``) and
agent-written bytes kept by the harness (``agent.log``, trajectories, code snapshots) are all
read as hostile data: every read is capped, links are refused (``O_NOFOLLOW`` on every path
component below the run directory), and git runs with hooks, filters and config disabled.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl_grading.history import SAFE_CONFIG
from autorl_records.logs import parse_jsonl
from autorl_sandbox_common.agentfiles import OPEN_FLAGS, no_links_below

MAX_LOG_BYTES = 16 * 1024**2
"""What is read of one log (the tail is kept: a crash is at the end)."""
MAX_BLOB_BYTES = 4 * 1024**2
"""Code-history files larger than this are read only up to it."""
MAX_CODE_BYTES = 64 * 1024**2
"""All code-history blobs read for one run, together."""
MAX_JSONL_LINES = 200_000


def read_capped(path: Path, root: Path, max_bytes: int = MAX_LOG_BYTES, tail: bool = False) -> str:
    """Text of a regular file under ``root`` (no links on the way), at most ``max_bytes``; ''
    when it is missing, a link, not regular or unreadable. ``tail`` keeps the end instead."""
    if not no_links_below(path, root):
        return ""
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        if tail and info.st_size > max_bytes:
            os.lseek(fd, info.st_size - max_bytes, os.SEEK_SET)
        chunks, left = [], max_bytes
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def read_jsonl(path: Path, root: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The JSON objects of an agent-written JSON-lines file (read capped, no links); bad
    lines are skipped with a note in ``problems`` (the run record's parser)."""
    return parse_jsonl(read_capped(path, root), path.name, problems, MAX_JSONL_LINES)


@dataclass
class CodeHistory:
    """Read-only view of ``code-history.git``: revisions, their files and diffs."""

    git_dir: Path
    problems: list[str] = field(default_factory=list)
    _budget: int = MAX_CODE_BYTES

    def _git(self, *args: str, max_bytes: int = MAX_BLOB_BYTES) -> str | None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(self.git_dir),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "HOME": str(self.git_dir),
        }
        try:
            done = subprocess.run(
                ["git", *SAFE_CONFIG, "-c", "core.pager=cat", "--no-pager", *args],
                env=env,
                capture_output=True,
                timeout=60,
                check=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self.problems.append(f"code-history.git: git {args[0]} failed ({type(exc).__name__})")
            return None
        return done.stdout[:max_bytes].decode("utf-8", errors="replace")

    @property
    def available(self) -> bool:
        return (self.git_dir / "HEAD").is_file() and not (self.git_dir / "HEAD").is_symlink()

    def revisions(self) -> list[tuple[str, float, str]]:
        """``(revision, unix time, message)`` oldest first."""
        if not self.available:
            return []
        out = self._git("log", "--reverse", "--format=%H %ct %s", max_bytes=MAX_LOG_BYTES)
        revs = []
        for line in (out or "").splitlines():
            parts = line.split(" ", 2)
            if len(parts) >= 2 and parts[1].isdigit():
                revs.append((parts[0], float(parts[1]), parts[2] if len(parts) > 2 else ""))
        return revs

    def files(self, rev: str) -> list[tuple[str, str, int]]:
        """``(path, blob id, size)`` of the regular files in ``rev`` (links are skipped)."""
        out = self._git("ls-tree", "-r", "-l", "--full-tree", rev, max_bytes=MAX_LOG_BYTES)
        found = []
        for line in (out or "").splitlines():
            meta, _, path = line.partition("\t")
            parts = meta.split()
            if len(parts) == 4 and parts[0] in {"100644", "100755"} and parts[3].isdigit():
                found.append((path, parts[2], int(parts[3])))
        return found

    def blob(self, blob_id: str) -> str:
        """A file's text, capped, and counted against the run's total code budget."""
        if self._budget <= 0:
            return ""
        text = self._git("cat-file", "blob", blob_id, max_bytes=min(MAX_BLOB_BYTES, self._budget))
        self._budget -= len(text or "")
        return text or ""

    def numstat(self, rev: str) -> list[tuple[str, int, int]]:
        """``(path, lines added, lines removed)`` of ``rev`` against its parent (or empty)."""
        out = self._git("show", "--format=", "--numstat", "--no-renames", rev)
        rows = []
        for line in (out or "").splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                added = int(parts[0]) if parts[0].isdigit() else 0
                removed = int(parts[1]) if parts[1].isdigit() else 0
                rows.append((parts[2], added, removed))
        return rows
