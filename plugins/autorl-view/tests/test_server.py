"""The viewer over HTTP: nothing without the token, loopback only, nothing outside the catalog,
agent-written text escaped, the campaign's numbers linked to their runs, Ctrl-C stops it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from autorl_testing.browser import active_content, page_tags
from autorl_view.app import CSP, cookie_name, create_app
from markupsafe import escape

AUTORL = str(Path(sys.executable).parent / "autorl")
PAGES = ["/", "/runs", "/run/runs/evil", "/api/run/runs/evil", "/campaign/campaigns/toy"]


def test_every_request_needs_the_token(served: Any, token: str) -> None:
    with httpx.Client(timeout=30, base_url=served.base) as client:
        for path in [*PAGES, "/static/viewer.js", "/nothing"]:
            for cookies in ({}, {cookie_name(token): "wrong"}):
                client.cookies.clear()
                answer = client.get(path, cookies=cookies)
                assert answer.status_code == 403, path
                assert "evil" not in answer.text and "<" not in answer.text
                assert answer.headers["content-security-policy"] == CSP
        answer = client.get(path + "?token=wrong")
        assert answer.status_code == 403


def test_the_token_becomes_a_strict_cookie_and_leaves_the_url(served: Any, token: str) -> None:
    with httpx.Client(timeout=30, base_url=served.base) as client:
        answer = client.get(f"/runs?task=gsm8k&token={token}")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/runs?task=gsm8k"
        cookie = answer.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert answer.headers["referrer-policy"] == "no-referrer"
        for path in PAGES:
            page = client.get(path, follow_redirects=True)
            assert page.status_code == 200, path
            assert page.headers["content-security-policy"] == CSP
            assert page.headers["x-content-type-options"] == "nosniff"


def test_only_a_loopback_host_is_answered(served_root: Path, serve: Any, token: str) -> None:
    """A page on another name that resolves to 127.0.0.1 (DNS rebinding) gets nothing."""
    server = serve(served_root)
    try:
        with httpx.Client(timeout=30, base_url=server.base) as client:
            evil = client.get(f"/runs?token={token}", headers={"host": "evil.example:80"})
            assert evil.status_code == 403
            assert client.get(f"/runs?token={token}").status_code == 303
    finally:
        server.server.stop()
    from starlette.testclient import TestClient

    pinned = TestClient(create_app(served_root, token, port=8123), base_url="http://127.0.0.1:9")
    assert pinned.get(f"/runs?token={token}", follow_redirects=False).status_code == 403


def test_nothing_outside_the_catalog_is_reachable(served: Any, token: str) -> None:
    with httpx.Client(
        timeout=30, base_url=served.base, cookies={cookie_name(token): token}
    ) as client:
        for path in ["/run/..", "/run/runs/../../etc", "/run/runs/evil/code-history.git",
                     "/run/%2e%2e/%2e%2e", "/campaign/../..", "/api/run/etc/passwd",
                     "/static/../app.py"]:  # fmt: skip
            answer = client.get(path, follow_redirects=True)
            assert "root:" not in answer.text and "print(" not in answer.text, path
            if answer.status_code != 404:  # the client resolved the dots: the runs list
                assert answer.url.path == "/runs", path


def test_agent_written_text_is_escaped_in_the_html(served: Any, token: str, payload: str) -> None:
    with httpx.Client(
        timeout=30, base_url=served.base, cookies={cookie_name(token): token}
    ) as client:
        for path in ["/run/runs/evil", "/run/runs/evil-log", "/campaign/campaigns/toy", "/runs"]:
            html = client.get(path).text
            tags = page_tags(html)
            assert [a for t, a in tags if t == "script"] == [
                {"src": "/static/viewer.js", "defer": None}
            ], path
            assert active_content(html, scripts=("/static/viewer.js",)) == [], path
            assert [a.get("id") for t, a in tags if t == "svg"] in ([], ["score-chart"]), path
        html = client.get("/run/runs/evil").text
        assert str(escape(payload)) in html  # shown, as text
        log = client.get("/run/runs/evil-log").text
        assert str(escape(payload)) in log


def test_the_run_page_shows_transcript_submissions_and_flags(served: Any, token: str) -> None:
    with httpx.Client(
        timeout=30, base_url=served.base, cookies={cookie_name(token): token}
    ) as client:
        html = client.get("/run/runs/evil").text
        assert html.count('class="call"') == 2
        assert html.count("role-assistant") == 2  # the first answer is not repeated
        assert "budget_warning" in html and "grader_probing" in html
        assert "+print(&#39;v2&#39;)" in html  # the diff from submission 1's snapshot
        assert "claimed" in html and "invalid checkpoint" in html
        log = client.get("/run/runs/evil-log").text
        assert "step 0 loss 1.0" in log and 'id="agent-log"' in log
        live = client.get("/api/run/runs/live").json()
        assert live["status"] == "running" and live["agent_seconds"] == 30.0
        assert [s["score"] for s in live["submissions"]] == ["12.00"]


def test_the_campaign_links_each_number_to_its_run(served: Any, token: str) -> None:
    with httpx.Client(
        timeout=30, base_url=served.base, cookies={cookie_name(token): token}
    ) as client:
        html = client.get("/campaign/campaigns/toy").text
        assert 'href="/run/campaigns/toy/runs/cell-a">20.00<' in html
        assert 'href="/run/campaigns/toy/runs/cell-a">c-a: 10.00<' in html
        assert 'href="/run/campaigns/toy/runs/cell-c">c-c: 2.00<' in html
        assert "pending" in html and "running (" in html  # with its elapsed time
        assert "<td>cell-d</td>" in html  # a run not (yet) on disk: named, not linked
        runs = client.get("/runs?campaign=toy").text
        assert "cell-a" in runs and "/run/runs/evil" not in runs


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp")
def test_the_command_listens_on_loopback_and_stops_on_ctrl_c(served_root: Path) -> None:
    proc = subprocess.Popen(
        [AUTORL, "view", str(served_root / "runs")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        url = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not url:
            line = proc.stdout.readline() if proc.stdout else ""
            found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
            url = found.group(0) if found else ""
        assert url, "no URL printed"
        port = int(url.split(":")[2].split("/")[0])
        for _ in range(200):  # the URL is printed before uvicorn listens
            try:
                assert httpx.get(url.split("?")[0]).status_code == 403
                break
            except httpx.TransportError:
                time.sleep(0.05)
        listening = [
            line.split()[1]
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
            if line.split()[1].endswith(f":{port:04X}") and line.split()[3] == "0A"
        ]
        assert listening == [f"0100007F:{port:04X}"]  # 127.0.0.1 only
        assert httpx.get(url, follow_redirects=True, timeout=30).status_code == 200
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
