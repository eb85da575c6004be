"""The viewer in headless Chromium: an injected run executes nothing, a real tiny run's page
shows its transcript, code diff and flags, a running run updates without a reload, and a
campaign's numbers lead to their runs. It also makes the screenshots in docs/images.

Headless Chromium comes from :mod:`autorl_testing.browser` (Debian's chromium and chromedriver
by path; skips without them, fails under ``AUTORL_REQUIRE_SANDBOXES``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_testing.browser import headless_chromium

pytestmark = pytest.mark.e2e  # a real `autorl run` and a browser

DOCS_IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"
_SCRATCH = tempfile.TemporaryDirectory(prefix="autorl-viewer-shots-")  # removed at exit
SCREENSHOTS = (
    DOCS_IMAGES if os.environ.get("AUTORL_UPDATE_SCREENSHOTS") == "1" else Path(_SCRATCH.name)
)
"""Where the screenshots go: docs/images only when asked (a test run leaves the checkout as it
found it); elsewhere they are still made, their size checked, and removed at exit."""
MAX_SCREENSHOT_BYTES = 150_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with headless_chromium("pip install -e './plugins/autorl-view[test]'") as driver:
        driver.set_window_size(1366, 900)
        yield driver


def _open(browser: Any, served: Any, path: str) -> list[dict[str, Any]]:
    """Open ``path`` through the token URL; the console's errors."""
    browser.get_log("browser")
    browser.get(served.url(path))
    _wait(lambda: browser.execute_script("return document.readyState") == "complete")
    time.sleep(0.2)
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


def _wait(check: Callable[[], Any], seconds: float = 20.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not reached in {seconds} s")


def _text(browser: Any, selector: str) -> str:
    return "\n".join(e.text for e in browser.find_elements("css selector", selector))


def _screenshot(browser: Any, name: str, element: Any = None) -> None:
    """viewer-<name>.png (docs/images with ``AUTORL_UPDATE_SCREENSHOTS=1``), made from what the
    test just checked (the window, or one element of the page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"viewer-{name}.png"
    if element is not None:
        element.screenshot(str(path))
    else:
        browser.save_screenshot(str(path))
    assert path.stat().st_size < MAX_SCREENSHOT_BYTES, f"{path.name} is too large for the docs"


def test_an_agents_html_and_script_run_nowhere(chromium: Any, served: Any, payload: str) -> None:
    for path in ["/run/runs/evil", "/run/runs/evil-log", "/runs", "/campaign/campaigns/toy"]:
        _open(chromium, served, path)
        assert chromium.execute_script("return window.__pwned === undefined"), path
        assert "pwned" not in chromium.title, path
        injected = "return document.querySelectorAll('[onload], [onerror], main img').length"
        assert chromium.execute_script(injected) == 0, path
        svgs = chromium.find_elements("css selector", "main svg")
        assert [e.get_attribute("id") for e in svgs] in ([], ["score-chart"]), path
    _open(chromium, served, "/run/runs/evil")
    shown = _text(chromium, "#transcript")
    assert "<script>window.__pwned = 'script'" in shown  # as text
    assert json.dumps(payload, ensure_ascii=False) in _text(chromium, ".tool-call pre")
    assert "invalid checkpoint <script>" in _text(chromium, "#submissions")
    assert "<svg onload=" in _text(chromium, "#flags")
    assert "<script>window.__pwned" in _text(chromium, ".diff-path")  # a file name
    _open(chromium, served, "/run/runs/evil-log")
    assert payload in _text(chromium, "#agent-log")
    # the page's own script ran (the policy allows it) while the injected ones did not
    assert chromium.execute_script("return typeof duration === 'function'")


def test_a_real_run_in_the_list_and_on_its_page(chromium: Any, served: Any, real_run: Path) -> None:
    errors = _open(chromium, served, "/runs")
    assert errors == []
    links = [e.text for e in chromium.find_elements("css selector", "#runs a.run-link")]
    assert "tiny" in links
    row = chromium.find_element("xpath", "//table[@id='runs']//tr[td/a[text()='tiny']]")
    assert "gsm8k" in row.text and "react" in row.text and "completed" in row.text
    _screenshot(chromium, "runs", chromium.find_element("tag name", "main"))

    chromium.find_element("link text", "tiny").click()
    _wait(lambda: chromium.find_elements("css selector", "#transcript"))
    assert chromium.find_element("tag name", "h1").text == "Run tiny"
    tools = [e.text for e in chromium.find_elements("css selector", ".tool-name")]
    assert {"shell", "write_file", "submit", "check_budget"} <= set(tools)
    results = _text(chromium, ".role-tool pre")
    assert "wrote" in results and "saved output/v1" in results
    assert "scored" in _text(chromium, "#submissions")
    diff = _text(chromium, "#submission-1 .diff")
    assert "train.py (added)" in diff and "+import torch" in diff
    flags = chromium.find_elements("css selector", "#flags, #no-flags")
    assert flags, "the analysis's flags section is missing"
    analysis = json.loads((real_run / "contributions" / "analysis.json").read_text())
    for flag in analysis["data"]["flags"]:
        assert flag["kind"] in _text(chromium, "#flags")
    chromium.execute_script("document.querySelector('#transcript .call').scrollIntoView()")
    _screenshot(chromium, "transcript")
    _screenshot(chromium, "submission", chromium.find_element("id", "submission-1"))
    chromium.execute_script("window.scrollTo(0, 0)")
    _screenshot(chromium, "run")


def test_a_running_run_updates_without_a_reload(chromium: Any, served: Any, live_run: Path) -> None:
    run_dir = live_run
    _open(chromium, served, f"/run/runs/{live_run.name}")
    chromium.execute_script("window.__same_page = true")
    assert len(chromium.find_elements("css selector", "#submissions tbody tr")) == 1
    assert chromium.find_element("id", "budget-bar").get_attribute("value") == "30"
    # the harness's heartbeat and a second submission, as the run writes them
    with (run_dir / "submissions.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"submission_id": 2, "status": "evaluating", "elapsed_s": 140}) + "\n")
    run = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**run, "agent_seconds": 150.0}))
    _wait(lambda: len(chromium.find_elements("css selector", "#submissions tbody tr")) == 2)
    _wait(lambda: chromium.find_element("id", "budget-bar").get_attribute("value") == "150")
    assert "evaluating" in _text(chromium, "#submissions")
    assert chromium.execute_script("return window.__same_page === true")  # no reload
    assert chromium.find_element("id", "status").text == "running"
    # the run ends: the page says so and stops polling
    (run_dir / "run.json").write_text(
        json.dumps({**run, "status": "completed", "end_reason": "agent_exit"})
    )
    _wait(lambda: chromium.find_element("id", "status").text == "completed")
    assert chromium.find_element("id", "end-reason").text == "agent_exit"


def test_a_campaign_number_links_to_its_run(chromium: Any, served: Any) -> None:
    errors = _open(chromium, served, "/campaign/campaigns/toy")
    assert errors == []
    statuses = _text(chromium, "#cells tbody td:nth-child(3)")
    assert "completed" in statuses and "pending" in statuses
    _screenshot(chromium, "campaign", chromium.find_element("tag name", "main"))
    chromium.find_element("css selector", "#groups a.cell-run").click()
    _wait(lambda: chromium.find_elements("css selector", "#transcript"))
    assert chromium.find_element("tag name", "h1").text == "Run cell-a"
    chromium.back()
    _wait(lambda: chromium.find_elements("css selector", "#cells"))
    chromium.find_element("css selector", "#cells tbody tr:first-child td:nth-child(4) a").click()
    _wait(lambda: chromium.find_elements("css selector", "#transcript"))
    assert "cell-a" in chromium.current_url
