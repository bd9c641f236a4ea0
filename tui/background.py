"""Slow engine and save calls off the UI thread: reading or writing a run's files (opening,
branching, exporting, a report) takes seconds at hundreds of agents, and the keys must stay
answered meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from textual.screen import Screen

from engine import SocialsimError

from . import heap

T = TypeVar("T")
#: Seconds the work waits at most for its notice to be drawn.
NOTICE_FIRST = 0.25


def in_background(
    screen: Screen, doing: str, fn: Callable[[], T], done: Callable[[T], object], group: str
) -> None:
    """Run ``fn`` on a worker thread of ``screen``: a notice says ``doing`` at once and stays
    until it ends; then ``done(result)`` runs on the UI thread, or the error is shown."""
    app = screen.app
    screen.notify(f"{doing}… (the keys still work)", timeout=3600)
    drawn = threading.Event()  # set once the notice is on screen (queued behind it)
    app.call_later(app.call_after_refresh, drawn.set)

    def ended(then: Callable[[], None]) -> None:
        # The "…" notice goes, queued behind the message that shows it: work that ends
        # at once must not clear before the notice is shown, leaving it up for good.
        app.call_later(app.clear_notifications)
        then()
        heap.settle_under(screen)  # what the work left, out of the collector's walk

    def failed(error: str) -> None:
        app.notify(f"{doing} failed: {error}", severity="error", timeout=10)

    def work() -> None:
        # The notice first: work started at once holds the GIL for half of each of the
        # screen's turns, and the notice took twice as long to appear.
        drawn.wait(NOTICE_FIRST)
        try:
            result = fn()
        except SocialsimError as err:
            app.call_from_thread(ended, partial(failed, str(err)))
            return
        except Exception as err:  # never a notice that stays for good: say what broke
            app.call_from_thread(ended, partial(failed, f"{type(err).__name__}: {err}"))
            raise
        app.call_from_thread(ended, partial(done, result))

    screen.run_worker(work, thread=True, group=group, exit_on_error=False)
