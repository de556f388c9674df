"""Driving Debian's Chromium with Playwright: a signed-in page that fails on any page error or CSP
violation, Playwright's expect, and axe-core's serious violations."""

from __future__ import annotations

import shutil
from contextlib import contextmanager

from helpers.paths import ARTIFACTS

# Debian's Chromium: browsers cannot be downloaded here, so Playwright drives the system one.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextmanager
def signed_in_page(browser, url: str, ready: str, screenshot: str):
    """A studio page at `url`, signed in through the local stand-in for Cognito (authorization
    code + PKCE) and showing `ready`; any page error or CSP violation fails the test, and a
    screenshot is kept in test-artifacts/."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if "Content Security Policy" in message.text else None)
    page.goto(url)
    page.click("#signin-link")
    page.wait_for_selector(ready)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
    context.close()
    assert errors == [], errors


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def axe_violations(page):
    """Serious and critical axe-core violations on what the page shows now."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in found
            if v["impact"] in ("serious", "critical")]
