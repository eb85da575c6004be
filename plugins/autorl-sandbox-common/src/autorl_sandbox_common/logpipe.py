"""The agent's stdout and stderr reach ``agent.log`` through a pipe the harness drains.

The agent never holds a descriptor of a harness file, so it cannot seek, truncate or grow the
log beyond the cap: past ``max_bytes`` the rest is counted and dropped, and the log says so.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

DEFAULT_MAX_BYTES = 256 * 1024**2


class LogPipe:
    def __init__(self, log_path: Path, max_bytes: int | None = None) -> None:
        self.log_path = log_path
        self.max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        self.read_fd, self.write_fd = os.pipe()
        os.set_inheritable(self.write_fd, True)
        self.written = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._drain, name="autorl-agent-log", daemon=True)

    def start(self) -> LogPipe:
        self._thread.start()
        return self

    def close_writer(self) -> None:
        """Call once the child holds the write end: EOF then comes when the agent's last
        process closes it."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def _drain(self) -> None:
        with open(self.log_path, "ab") as log:
            while True:
                try:
                    chunk = os.read(self.read_fd, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                room = self.max_bytes - self.written
                if room > 0:
                    log.write(chunk[:room])
                    log.flush()
                    self.written += min(room, len(chunk))
                self.dropped += max(0, len(chunk) - max(room, 0))
            if self.dropped:
                log.write(
                    f"\n[autorl: agent output over {self.max_bytes} bytes; "
                    f"{self.dropped} more bytes dropped]\n".encode()
                )
        os.close(self.read_fd)

    def join(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)
