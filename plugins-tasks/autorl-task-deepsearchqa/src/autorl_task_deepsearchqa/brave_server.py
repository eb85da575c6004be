"""A local HTTP server speaking the Brave Search web API, answering from a corpus (for tests).

The real API cannot be reached from CI, so the ``brave`` backend's tests talk to this server over
real sockets: ``GET /res/v1/web/search?q=...&count=N`` with the ``X-Subscription-Token`` header,
answered in Brave's response layout (``{"type": "search", "query": {...}, "web": {"type":
"search", "results": [{"title", "url", "description", ...}]}}``, query words wrapped in
``<strong>`` as Brave does). A wrong or missing token gets 401; ``fail_next(status)`` makes the
next requests fail (to test retries). Standard library only::

    with BraveServer(api_key="test") as server:
        os.environ["BRAVE_SEARCH_BASE_URL"] = server.url
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from autorl_task_deepsearchqa.bm25 import BM25Index
from autorl_task_deepsearchqa.corpus import load_documents
from autorl_task_deepsearchqa.search_backends import BRAVE_PATH, SHIPPED_CORPUS


def _highlight(text: str, query: str) -> str:
    for word in sorted(set(re.findall(r"\w{4,}", query)), key=len, reverse=True):
        text = re.sub(rf"\b({re.escape(word)})\b", r"<strong>\1</strong>", text, flags=re.I)
    return text


class BraveServer:
    """Brave's web search endpoint on 127.0.0.1 and a free port, over a BM25 index."""

    def __init__(self, api_key: str = "test", corpus_path: str | Path = SHIPPED_CORPUS) -> None:
        self.api_key = api_key
        self.index = BM25Index(load_documents(corpus_path))
        self.requests: list[dict[str, Any]] = []
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fail_next(self, *statuses: int) -> None:
        with self._lock:
            self._failures.extend(statuses)

    def answer(self, query: str, count: int) -> dict[str, Any]:
        hits = self.index.search(query, count)
        return {
            "type": "search",
            "query": {"original": query, "more_results_available": False},
            "web": {
                "type": "search",
                "results": [
                    {
                        "type": "search_result",
                        "title": hit["title"],
                        "url": hit["url"].replace("corpus://", "https://calder.example/wiki/"),
                        "description": _highlight(hit["snippet"], query),
                        "language": "en",
                    }
                    for hit in hits
                ],
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                return

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                params = {k: v[-1] for k, v in parse_qs(url.query).items()}
                with server._lock:
                    server.requests.append({"path": url.path, "params": params})
                    failure = server._failures.popleft() if server._failures else None
                if url.path != BRAVE_PATH:
                    self._send(404, {"type": "ErrorResponse", "error": {"code": "NOT_FOUND"}})
                elif self.headers.get("X-Subscription-Token") != server.api_key:
                    self._send(401, {"type": "ErrorResponse", "error": {"code": "UNAUTHORIZED"}})
                elif failure is not None:
                    self._send(failure, {"type": "ErrorResponse", "error": {"code": "SCRIPTED"}})
                elif not params.get("q"):
                    self._send(422, {"type": "ErrorResponse", "error": {"code": "VALIDATION"}})
                else:
                    count = min(20, max(1, int(params.get("count", "20"))))
                    self._send(200, server.answer(params["q"], count))

        return Handler

    def start(self) -> BraveServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> BraveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
