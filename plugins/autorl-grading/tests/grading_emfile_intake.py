"""A submission taken in while the grader's process has no descriptor left, for one test.

``python grading_emfile_intake.py ROOT``: a GradingService over ROOT/workspace whose process
takes every descriptor its RLIMIT_NOFILE allows (as an agent's socket flood would), submits
output/v1 and gives the descriptors back after 1.5 s; prints the submission's final view and
how many times the process ran out, as one JSON line.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

from grading_flood_server import grading_service  # beside this script


def main() -> None:
    root = Path(sys.argv[1])
    service = grading_service(root)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    held: list[int] = []
    with open(root / "submissions.jsonl", "a"):  # the log exists before the descriptors go
        pass
    log_fd = os.open(root / "submissions.jsonl", os.O_WRONLY | os.O_APPEND)
    while True:
        try:
            held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError as exc:
            assert exc.errno == errno.EMFILE
            break
    os.close(held.pop())  # one for the submissions log's append
    os.close(log_fd)
    threading.Timer(1.5, lambda: [os.close(fd) for fd in held]).start()
    started = time.monotonic()
    view = service.submit("output/v1", wait=True, timeout=60)
    print(json.dumps({"view": view, "held": len(held), "s": time.monotonic() - started}))
    service.close()


if __name__ == "__main__":
    main()
