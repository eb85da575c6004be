"""A ThreadedServer in its own process with a low RLIMIT_NOFILE, for the flood tests.

``python serving_flood_server.py NOFILE MAX_CONNECTIONS SOCKET``: prints one JSON line (url,
pid) once serving; on a line ``stop`` on stdin, stops, prints the seconds it took and the gate
statistics as a second JSON line, and exits.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from autorl_serving import ThreadedServer


async def app(scope: dict, receive: object, send: object) -> None:
    """/health answers at once; /hang never answers (a request in flight at shutdown)."""
    import asyncio

    if scope["type"] != "http":
        return
    if scope["path"] == "/hang":
        await asyncio.sleep(3600)
    body = b'{"status": "ok"}'
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def main() -> None:
    nofile, max_connections, sock = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    server = ThreadedServer(
        app, what="flood test server", unix_socket=sock, max_connections=max_connections or None
    ).start()
    print(json.dumps({"url": server.url, "limit": server.gates[0].limit}), flush=True)
    sys.stdin.readline()
    started = time.monotonic()
    server.stop()
    print(json.dumps({"stop_s": time.monotonic() - started, **server.stats()}), flush=True)


if __name__ == "__main__":
    main()
