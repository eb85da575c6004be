"""The ``autorl compare`` page opened in headless Chromium: tables and figures render, and the
console stays clean.

Headless Chromium comes from :mod:`autorl_testing.browser` (Debian's chromium and chromedriver
by path; skips without them, fails under ``AUTORL_REQUIRE_SANDBOXES``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from autorl_testing.browser import headless_chromium, open_page
from click.testing import CliRunner

from autorl.cli.main import cli

pytestmark = pytest.mark.e2e  # headless Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_chromium("pip install -e './plugins/autorl-campaign[test]'") as driver:
        yield driver


def _rows(browser: Any, table_id: str) -> int:
    return len(browser.find_elements("css selector", f"#{table_id} tbody tr"))


def test_the_page_renders_in_chromium(browser: Any, campaign_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["compare", str(campaign_dir)])
    assert result.exit_code == 0, result.output
    errors = open_page(browser, campaign_dir / "compare" / "index.html")
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
    errors = open_page(browser, page)
    text = " ".join(e["message"] for e in errors)
    assert "missing.png" in text and "undefinedFunction" in text
    width = browser.execute_script("return document.images[0].naturalWidth;")
    assert width == 0
