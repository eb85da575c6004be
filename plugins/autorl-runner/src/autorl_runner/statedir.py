"""The short directory for a run's sockets, when its run directory's path is too long for one.

AF_UNIX paths hold 107 bytes and a campaign's runs nest deep, so such a run's grader, gateway
and egress sockets live in a private directory under /tmp. A harness killed with SIGKILL runs
no clean-up, so these directories used to stay (15 after one test session). Each harness now
holds an exclusive ``flock`` on its directory for as long as it lives; the kernel drops it
when the process dies, however it dies, and the next run that needs such a directory removes
every one nobody holds. A lock, not a pid: pids are reused and differ across pid namespaces.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "autorl-state-"
_NEW = "autorl-new-"


class ShortStateDir:
    """A fresh ``/tmp/autorl-state-*`` directory, locked by this process until :meth:`remove`."""

    def __init__(self) -> None:
        sweep()
        fresh = Path(tempfile.mkdtemp(prefix=_NEW))
        self._fd = os.open(fresh, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.path = fresh.with_name(PREFIX + fresh.name.removeprefix(_NEW))
        fresh.rename(self.path)  # only a locked directory ever has the swept name

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def sweep(tmp: Path | None = None) -> list[Path]:
    """Remove the short state directories of harnesses that are gone; the removed ones."""
    removed = []
    for path in Path(tmp or tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # gone meanwhile, or not a directory
        try:
            if os.fstat(fd).st_uid != os.geteuid():
                continue  # another user's harness (O_DIRECTORY: never a file or a link)
            with contextlib.suppress(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        finally:
            os.close(fd)
    return removed
