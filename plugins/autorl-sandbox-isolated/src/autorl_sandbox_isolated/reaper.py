"""Empty and remove a sandbox's cgroup when the run that made it dies, however it dies.

Why: the run empties its sandbox's cgroup itself when the agent stops, but a run killed with
SIGKILL (a campaign's kill, Ray tearing its worker down, the OOM killer) cleans nothing up. The
outer bwrap's ``--die-with-parent`` then takes the sandbox down, except in the moment before
bwrap's child is set up: killed then, the child waits forever, an orphan in the run's cgroup.

The reaper is started by the run before bwrap, in a session of its own (a kill of the run's
process group misses it) and outside the agent's cgroup and namespaces (the agent cannot see or
signal it). It waits until the pipe only the run holds reaches end of file (the run closed it
after its own cleanup, or died) or until the run is no longer its parent; then it kills every
process left in the cgroup and removes the cgroup. Usage (the run's side is
:func:`start_reaper`)::

    python -m autorl_sandbox_isolated.reaper <pipe fd> <run pid> <cgroup dir>...
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

POLL_S = 0.5
"""How often the reaper checks that the run is still its parent (the pipe wakes it at once)."""


def wait_for_the_run(fd: int, run_pid: int) -> None:
    """Return once the run closed its end of the pipe or is gone."""
    while os.getppid() == run_pid:
        ready, _, _ = select.select([fd], [], [], POLL_S)
        if ready and not os.read(fd, 64):
            return


def reap(dirs: list[Path]) -> None:
    from autorl.types import Limits
    from autorl_sandbox_isolated.cgroups import AgentCgroup

    cgroup = AgentCgroup(name="reaper", limits=Limits(), dirs=dirs)
    cgroup.kill_all()
    cgroup.remove()


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    fd, run_pid = int(argv[0]), int(argv[1])
    wait_for_the_run(fd, run_pid)
    reap([Path(d) for d in argv[2:]])
    return 0


class Reaper:
    """The run's handle on its reaper: :meth:`release` once the run has cleaned up itself."""

    def __init__(self, popen: subprocess.Popen[bytes], write_fd: int) -> None:
        self._popen = popen
        self._write_fd = write_fd

    def release(self, timeout: float = 10.0) -> None:
        """Close the run's end of the pipe and wait for the reaper to finish."""
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._popen.kill()
            self._popen.wait()


def start_reaper(dirs: list[Path]) -> Reaper | None:
    """Start the reaper of the cgroup ``dirs`` (None when there is no cgroup to watch)."""
    if not dirs:
        return None
    read_fd, write_fd = os.pipe()  # both close-on-exec: no other child inherits the run's end
    try:
        popen = subprocess.Popen(
            [sys.executable, "-m", "autorl_sandbox_isolated.reaper", str(read_fd),
             str(os.getpid()), *map(str, dirs)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # it must not hold the run's output open after the run
            stderr=subprocess.DEVNULL,
            pass_fds=(read_fd,),
            start_new_session=True,
        )  # fmt: skip
    except OSError:
        os.close(write_fd)
        raise
    finally:
        os.close(read_fd)
    return Reaper(popen, write_fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
