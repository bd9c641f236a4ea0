"""Opening a report in headless Chromium (Debian's ``chromium``, driven by Playwright's
Python package): console errors, requests that left the file, and a screenshot."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Chromium's flags for a run that reaches nothing but the page it is given.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def chromium() -> str | None:
    """The Chromium binary, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright)"
    if chromium() is None:
        return "no Chromium installed (apt-get install chromium)"
    return None


@dataclass
class Opened:
    page: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    seconds: float = 0.0


@contextmanager
def open_page(path: Path, width: int = 1280, height: int = 900) -> Iterator[Opened]:
    """``path`` opened from ``file://`` in a fresh profile; the page's console errors and
    every request to anything but a ``file:``/``data:``/``blob:`` URL are recorded."""
    from playwright.sync_api import sync_playwright

    binary = chromium()
    assert binary is not None
    profile = tempfile.mkdtemp(prefix="socialsim-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=binary,
                headless=True,
                args=FLAGS,
                viewport={"width": width, "height": height},
            )
            try:
                page = context.new_page()
                opened = Opened(page)
                page.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
                page.on("pageerror", lambda e: opened.errors.append(str(e)))
                page.on(
                    "request",
                    lambda r: (
                        r.url.split(":", 1)[0] not in ("file", "data", "blob")
                        and opened.requests.append(r.url)
                    ),
                )
                start = time.perf_counter()
                page.goto(path.resolve().as_uri())
                page.wait_for_selector("body[data-ready=yes]", timeout=60_000)
                opened.seconds = time.perf_counter() - start
                yield opened
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
