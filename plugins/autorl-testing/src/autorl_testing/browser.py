"""Headless Chromium for checking HTML that a plugin writes (reports, comparison pages).

Selenium drives Debian's ``chromium`` and ``chromedriver`` by their paths, so Selenium Manager
never tries to download a driver (there may be no network). Without them the test skips, and
fails instead when ``AUTORL_REQUIRE_SANDBOXES`` is set (``make test``, CI), where a skip would
hide a missing ``make setup-browser``.

    with headless_chromium("pip install -e './my-plugin[test]'") as browser:
        errors = open_page(browser, out_dir / "report.html")
        assert errors == []
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REQUIRED = "AUTORL_REQUIRE_SANDBOXES"


def missing(selenium_hint: str) -> str | None:
    """Why the check cannot run here (a missing binary or selenium), or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} is missing: make setup-browser (Debian: chromium, chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return f"selenium is missing: {selenium_hint}"
    return None


@contextmanager
def headless_chromium(selenium_hint: str = "pip install selenium") -> Iterator[Any]:
    """A Selenium Chrome driver on headless Chromium that records the console; skips (or
    fails under ``AUTORL_REQUIRE_SANDBOXES``) where it cannot run."""
    problem = missing(selenium_hint)
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


def open_page(browser: Any, page: Path, settle_s: float = 0.5) -> list[dict[str, Any]]:
    """Load ``page`` from disk (no server); the console's errors (SEVERE entries) of that load.

    Errors can reach the log a little after ``get`` returns (a failed image on a busy machine),
    so the log is read until the page is complete and ``settle_s`` passed without a new entry.
    """
    browser.get_log("browser")  # drop what an earlier page left
    browser.get(page.resolve().as_uri())
    entries: list[dict[str, Any]] = []
    quiet_since, deadline = time.monotonic(), time.monotonic() + 10 * settle_s
    while time.monotonic() < deadline:
        new = browser.get_log("browser")
        entries += new
        complete = browser.execute_script("return document.readyState") == "complete"
        if new or not complete:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= settle_s:
            break
        time.sleep(0.05)
    return [e for e in entries if e.get("level") == "SEVERE"]


class _Tags(HTMLParser):
    """The elements of a page, as a browser's parser would see them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)
        self.close()  # what is still buffered (a last tag) is parsed too

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def page_tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """``(tag, attributes)`` of every element of ``html``, in order."""
    return _Tags(html).tags


ACTIVE_TAGS = frozenset({"img", "iframe", "object", "embed", "frame", "base"})


def active_content(html: str, scripts: tuple[str, ...] = ()) -> list[str]:
    """What in a page would run or fetch besides the page's own ``scripts`` (their ``src``):
    other scripts, event-handler attributes, ``javascript:`` URLs and elements that load or
    redirect (img, iframe, object, embed, base, a meta refresh). Empty for an inert
    page: what an agent wrote can be shown in it, never run by it."""
    found = []
    for tag, attrs in page_tags(html):
        if tag == "script" and attrs.get("src") not in scripts:
            found.append(f"<script {attrs}>")
        if tag in ACTIVE_TAGS or (tag == "meta" and "http-equiv" in attrs):  # a refresh
            found.append(f"<{tag} {attrs}>")
        found += [f"<{tag} {key}=...>" for key in attrs if key.startswith("on")]
        found += [
            f"<{tag} {key}={value!r}>"
            for key, value in attrs.items()
            if (value or "").strip().lower().startswith("javascript:")
        ]
    return found
