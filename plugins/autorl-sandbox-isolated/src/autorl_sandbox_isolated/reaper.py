"""Empty and remove a sandbox's cgroup when the run that made it dies, however it dies.

Why: the run empties its sandbox's cgroup itself when the agent stops, but a run killed with
SIGKILL (a campaign's kill, Ray tearing its worker down, the OOM killer) cleans nothing up. The
outer bwrap's ``--die-with-parent`` then takes the sandbox down, except in the moment before
bwrap's child is set up: killed then, the child waits forever, an orphan in the run's cgroup.

The reaper is started by the run before bwrap, in a session of its own (a kill of the run's
process group misses it) and outside the agent's cgroup and namespaces (the agent cannot see or
signal it). Its stdin is a pipe only the run writes to. It says ``ready`` once it has imported
all it needs, then waits until the run writes to that pipe (its own cleanup is done), the pipe
reaches end of file (the run died), or the run is no longer its parent (it died while a child
it forked still holds the pipe); then it kills every process left in the cgroup and removes
the cgroup, again until the removal succeeds (a process may still be joining). Usage (the run's
side is :func:`start_reaper`)::

    python -I -m autorl_sandbox_isolated.reaper <run pid> <log file> <cgroup dir>... < pipe
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from autorl_sandbox_isolated.cgroups import kill_cgroup

if TYPE_CHECKING:  # the reaper process imports the standard library only: it starts in ~50 ms
    import subprocess

POLL_S = 0.5
"""How often the reaper checks that the run is still its parent (the pipe wakes it at once)."""
REMOVE_S = 30.0
"""How long the reaper keeps killing and removing before it gives up (and says so)."""
READY = b"ready\n"


def wait_for_the_run(fd: int, run_pid: int) -> None:
    """Return once the run wrote to the pipe, closed it, or is gone."""
    while os.getppid() == run_pid:
        if _readable(fd, POLL_S):
            return


def reap(dirs: list[Path], deadline_s: float = REMOVE_S) -> list[Path]:
    """Kill what is in the cgroup and remove it, until it is gone; the directories left."""
    deadline = time.monotonic() + deadline_s
    left = list(dirs)
    while left and time.monotonic() < deadline:
        kill_cgroup(left, timeout=1.0)
        for directory in list(left):
            try:
                directory.rmdir()
            except FileNotFoundError:  # the run removed it itself
                pass
            except OSError as exc:
                if exc.errno == errno.EBUSY:  # a process joined after the kill: kill again
                    continue
                raise  # anything else will not pass by retrying
            left.remove(directory)
        if left:
            time.sleep(0.05)
    return left


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    run_pid, log_path, dirs = int(argv[0]), Path(argv[1]), [Path(d) for d in argv[2:]]
    with contextlib.suppress(OSError):  # the run may already be gone: reap all the same
        os.write(1, READY)
    try:
        wait_for_the_run(0, run_pid)
        left = reap(dirs)
        problem = f"could not remove {', '.join(map(str, left))}" if left else ""
    except Exception as exc:  # the run may be gone: its record is the only one left
        problem = f"{type(exc).__name__}: {exc}"
    if problem:
        with open(log_path, "a") as log:
            log.write(f"autorl cgroup reaper: {problem}\n")
        return 1
    return 0


class Reaper:
    """The run's handle on its reaper: :meth:`ready` before bwrap starts, :meth:`release` once
    the run has cleaned up itself."""

    def __init__(self, popen: subprocess.Popen[bytes], write_fd: int) -> None:
        self._popen = popen
        self._write_fd = write_fd

    def ready(self, timeout: float = 30.0) -> None:
        """Wait until the reaper watches the run; refuse to go on without it."""
        from autorl.errors import ConfigError

        out = self._popen.stdout
        if out is None:
            return
        with out:
            said = out.read(len(READY)) if _readable(out.fileno(), timeout) else b""
        self._popen.stdout = None
        if said != READY:
            self.release(timeout=1.0)
            raise ConfigError(
                "sandbox 'isolated': its cgroup reaper did not start "
                f"(exit status {self._popen.returncode}; `{sys.executable} -I -m "
                "autorl_sandbox_isolated.reaper` shows why)",
                hint="reinstall autorl-sandbox-isolated in the harness's environment",
            )

    def release(self, timeout: float = 10.0) -> None:
        """Tell the reaper the run is done (a byte, since a child the run forked may hold the
        pipe open too), close the pipe and wait for the reaper to finish."""
        import subprocess

        if self._write_fd >= 0:
            with contextlib.suppress(OSError):
                os.write(self._write_fd, b"x")
            os.close(self._write_fd)
            self._write_fd = -1
        if self._popen.stdout is not None:
            self._popen.stdout.close()
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # still emptying a stubborn cgroup: let it finish
            import threading  # (and log) on its own; a thread collects its exit status

            threading.Thread(target=self._popen.wait, name="autorl-reaper", daemon=True).start()


def start_reaper(dirs: list[Path], log_path: Path) -> Reaper | None:
    """Start the reaper of the cgroup ``dirs`` (None when there is no cgroup to watch); it
    starts while the run prepares the sandbox, :meth:`Reaper.ready` waits for it. It writes to
    ``log_path``, a harness file, only if something failed."""
    import subprocess

    if not dirs:
        return None
    read_fd, write_fd = os.pipe()  # both close-on-exec: no other child inherits the run's end
    try:
        popen = subprocess.Popen(
            [sys.executable, "-I", "-m", "autorl_sandbox_isolated.reaper", str(os.getpid()),
             str(log_path), *map(str, dirs)],
            cwd="/",
            stdin=read_fd,
            stdout=subprocess.PIPE,  # READY, then nothing: closed before the run goes on
            stderr=subprocess.DEVNULL,  # never the run's own output: it must not hold it open
            start_new_session=True,
        )  # fmt: skip
    except BaseException:
        os.close(write_fd)
        raise
    finally:
        os.close(read_fd)
    return Reaper(popen, write_fd)


def _readable(fd: int, timeout: float) -> bool:
    """Data, end of file or an error on ``fd`` within ``timeout`` seconds (poll, not select:
    the descriptor may be above 1023)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(timeout * 1000))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
