"""The disk the agent fills: workspace and HOME, measured in a background thread.

No per-directory quota exists on an ordinary file system, so the harness measures: allocated
blocks (a sparse file costs what it really uses) and the number of entries (millions of empty
files exhaust inodes, not bytes). Past the cap the engine stops the agent (``disk_limit``).
The code history counts too: its size follows from what the agent writes into ``code/``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

MAX_ENTRIES = 2_000_000
INTERVAL_S = 5.0


def agent_roots(run_dir: Path) -> tuple[Path, ...]:
    """Where the agent's writing costs disk: its workspace, its HOME and the harness's code
    history of ``workspace/code`` (which grows with every new file the agent writes there)."""
    return (run_dir / "workspace", run_dir / "home", run_dir / "code-history.git")


def disk_usage(roots: tuple[Path, ...], max_entries: int = MAX_ENTRIES) -> tuple[int, int]:
    """(allocated bytes, entries) under ``roots``, without following links; stops counting at
    ``max_entries`` (already over any sane cap)."""
    used = entries = 0
    for root in roots:
        stack = [str(root)]
        while stack and entries < max_entries:
            try:
                with os.scandir(stack.pop()) as it:
                    for entry in it:
                        entries += 1
                        try:
                            info = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        used += info.st_blocks * 512
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
            except OSError:
                continue
    return used, entries


class DiskWatch:
    def __init__(self, roots: tuple[Path, ...], cap_gb: float | None) -> None:
        self.roots = roots
        self.cap = None if cap_gb is None else int(cap_gb * 1024**3)
        self.used = 0
        self.entries = 0
        self.exceeded = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="autorl-disk", daemon=True)

    def start(self) -> DiskWatch:
        if self.cap is not None:
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            self.used, self.entries = disk_usage(self.roots)
            if self.used > self.cap or self.entries >= MAX_ENTRIES:
                self.exceeded = True
                return

    def report(self) -> dict[str, int | None]:
        return {"used_bytes": self.used, "entries": self.entries, "cap_bytes": self.cap}

    def stop(self) -> None:
        self._stop.set()
