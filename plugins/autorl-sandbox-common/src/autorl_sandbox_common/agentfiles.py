"""Reading what the agent wrote: never follow its links, never block on its FIFOs, cap sizes.

The harness reads agent files after a run (CLI trajectories in its HOME, logs): each one is
hostile data. A symlink could point at held-out data or ``/dev/zero``; a FIFO would block the
harness forever; a file could be larger than the disk. These helpers refuse all three.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 256 * 1024**2
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def no_links_below(path: Path, root: Path) -> bool:
    """True when ``path`` lies under ``root`` and no component from ``root`` down is a link."""
    try:
        relative = Path(path).relative_to(root)
    except ValueError:
        return False
    current = Path(root)
    for part in relative.parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return False
        except OSError:
            return False
    return True


def copy_agent_file(
    source: Path, target: Path, root: Path, max_bytes: int = MAX_FILE_BYTES
) -> bool:
    """Copy a regular file the agent wrote under ``root``; False (nothing copied) for links,
    FIFOs, devices, files over ``max_bytes``, or anything that changed under us."""
    if not no_links_below(source, root):
        return False
    try:
        fd = os.open(source, OPEN_FLAGS)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        copied = 0
        with open(target, "wb") as out:
            while copied < max_bytes and (chunk := os.read(fd, 1 << 20)):
                out.write(chunk[: max_bytes - copied])
                copied += len(chunk)
        return True
    finally:
        os.close(fd)
