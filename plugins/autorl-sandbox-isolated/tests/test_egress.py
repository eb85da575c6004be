"""Egress: nothing by default; with an allowlist, only listed hosts, through the logging proxy."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from autorl_sandbox_common.egress import EgressProxy, allowed
from autorl_sandbox_common.runtime import build_runtime
from autorl_sandbox_isolated.sandbox import IsolatedSandbox, bwrap_path

from autorl.types import AgentLaunch, Forward, SandboxRequest


def test_allowlist_matching() -> None:
    allow = ["pypi.org", "files.pythonhosted.org:443", "*.example.org", "127.0.0.1:8080"]
    assert allowed("pypi.org", 443, allow) and allowed("PyPI.org.", 80, allow)
    assert not allowed("pypi.org", 22, allow)
    assert allowed("files.pythonhosted.org", 443, allow)
    assert not allowed("files.pythonhosted.org", 80, allow)
    assert allowed("a.b.example.org", 443, allow) and not allowed("example.org.evil", 443, allow)
    assert allowed("127.0.0.1", 8080, allow) and not allowed("127.0.0.2", 8080, allow)


@pytest.fixture
def web() -> Iterator[int]:
    """A plain HTTP server on the host's loopback (what the allowlist lets through)."""

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"hello from the allowed host"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


AGENT = """
import json, os, socket, urllib.request
port = int(os.environ["WEB_PORT"])
out = {}
for label, host in (("allowed", "127.0.0.1"), ("denied", "127.0.0.2")):
    try:
        out[label] = urllib.request.urlopen(f"http://{host}:{port}/", timeout=10).read().decode()
    except Exception as exc:
        out[label] = f"{type(exc).__name__}: {getattr(exc, 'code', '')}"
try:
    socket.create_connection(("127.0.0.1", port), timeout=3)
    out["direct"] = "reached"
except OSError as exc:
    out["direct"] = type(exc).__name__
json.dump(out, open("egress.json", "w"))
"""


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap not installed")
def test_allowlist_through_the_proxy_from_inside_the_sandbox(tmp_path: Path, web: int) -> None:
    state = tmp_path / "run" / "sandbox"
    state.mkdir(parents=True)
    log = tmp_path / "run" / "egress.jsonl"
    proxy = EgressProxy([f"127.0.0.1:{web}"], log, state / "egress.sock").start()
    runtime = build_runtime()
    workspace = tmp_path / "run" / "workspace"
    workspace.mkdir()
    (workspace / "agent.py").write_text(AGENT)
    env = {"WEB_PORT": str(web), **proxy.env()}
    env["NO_PROXY"] = env["no_proxy"] = ""  # the test server is on loopback: proxy it too
    request = SandboxRequest(
        launch=AgentLaunch(argv=(str(runtime.python), "agent.py"), env=env),
        workspace=workspace,
        home=tmp_path / "run" / "home",
        log_path=tmp_path / "run" / "agent.log",
        state_dir=state,
        read_only=runtime.read_only,
        forwards=(Forward("egress", proxy.port, state / "egress.sock"),),
    )
    try:
        proc = IsolatedSandbox().start(request)
        assert proc.wait(60) == 0, (tmp_path / "run" / "agent.log").read_text()
    finally:
        proxy.stop()
    out = json.loads((workspace / "egress.json").read_text())
    assert out["allowed"] == "hello from the allowed host"
    assert out["denied"].startswith("HTTPError: 403")
    assert out["direct"] != "reached"  # only the proxy leads out
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    decisions = {(x["host"], x["allowed"]) for x in lines if "allowed" in x}
    assert decisions == {("127.0.0.1", True), ("127.0.0.2", False)}
    assert proxy.requests == 2 and proxy.denied == 1
