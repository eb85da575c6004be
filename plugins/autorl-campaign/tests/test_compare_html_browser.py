"""The ``autorl compare`` page opened in headless Chromium: tables and figures render, and the
console stays clean.

Selenium drives Debian's chromedriver by its path, so Selenium Manager never tries to download
a driver (there is no network for it). Without Chromium the test skips, and fails instead when
``AUTORL_REQUIRE_SANDBOXES`` is set (``make test``, CI): a skip there would hide a missing
``make setup-browser``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autorl.cli.main import cli

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REQUIRED = "AUTORL_REQUIRE_SANDBOXES"


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} is missing: make setup-browser (Debian: chromium, chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is missing: pip install -e './plugins/autorl-campaign[test]'"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    problem = _missing()
    if problem:
        if os.environ.get(REQUIRED):
            pytest.fail(f"{REQUIRED} is set but the HTML check cannot run: {problem}")
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, page: Path) -> list[dict[str, Any]]:
    """Load ``page``; return the console's errors (SEVERE entries) of that load."""
    browser.get_log("browser")  # drop what an earlier page left
    browser.get(page.resolve().as_uri())
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


def _rows(browser: Any, table_id: str) -> int:
    return len(browser.find_elements("css selector", f"#{table_id} tbody tr"))


def test_the_page_renders_in_chromium(browser: Any, campaign_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["compare", str(campaign_dir)])
    assert result.exit_code == 0, result.output
    errors = _open(browser, campaign_dir / "compare" / "index.html")
    assert errors == []
    assert browser.title == "autorl compare: toy"
    # rows as computed in test_analysis.py: 4 groups, 2 tasks, 2 paired comparisons,
    # 2 drivers of react on gsm8k, 13 cells of every status
    assert _rows(browser, "groups") == 4
    assert _rows(browser, "noise") == 2
    assert _rows(browser, "pass-at-k") == 4
    assert _rows(browser, "paired") == 2
    assert _rows(browser, "driver-effect") == 2
    assert _rows(browser, "cells") == 13
    cell = browser.find_element("css selector", "#groups tbody tr:first-child td:nth-child(5)")
    assert cell.text == "6.00 [4.00, 8.00]"
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth]);"
    )
    assert len(images) == 6
    for alt, complete, width in images:
        assert complete and width > 0, f"figure {alt!r} did not render"
    assert all(i.is_displayed() for i in browser.find_elements("css selector", "img"))


def test_the_check_catches_a_broken_page(browser: Any, tmp_path: Path) -> None:
    """The same check on a page with a missing image and a script error reports both."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<img src="missing.png" alt="missing"><script>undefinedFunction();</script>'
        "</body></html>",
        encoding="utf-8",
    )
    errors = _open(browser, page)
    text = " ".join(e["message"] for e in errors)
    assert "missing.png" in text and "undefinedFunction" in text
    width = browser.execute_script("return document.images[0].naturalWidth;")
    assert width == 0
