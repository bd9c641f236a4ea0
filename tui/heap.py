"""Short walks for the cyclic garbage collector. A full collection walks every object the
collector tracks, holding the GIL throughout: with a 300-agent run open, the app's heap
(its widgets, transcripts, the rounds read, the modules imported) made each one 100–700 ms,
on whichever thread allocated, and a key pressed meanwhile waited that long. So when a
piece of work ends with the main screen on top, what lives on is moved out of the
collector's walk (:func:`settle`); the engine does the same after each round. A dialog's
widgets are not frozen while it is open (they die in reference cycles when it closes).
What dies later of what was frozen (a run the app no longer shows, after a branch or an
open) is found by :func:`reclaim`, when the app has been idle a while."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.screen import Screen

#: Objects frozen since the last :func:`reclaim` that make the next one worth its pause.
RECLAIM_AFTER = 200_000
#: Seconds without a key, a round or work in flight after which the app is idle, and how
#: often it looks.
IDLE_FOR, IDLE_EVERY = 20.0, 5.0


def settle() -> None:
    """Collect the young generations' garbage (a few ms), then freeze what survives: the
    next full collections walk only what is made after."""
    gc.collect(1)
    gc.freeze()


def settle_under(screen: Screen) -> None:
    """:func:`settle`, when ``screen`` is the one on top (a dialog above it: not now)."""
    if screen.app.screen is screen:
        settle()


def frozen() -> int:
    """How many objects are out of the collector's walk."""
    return gc.get_freeze_count()


def reclaim(since: int) -> bool:
    """When :data:`RECLAIM_AFTER` objects or more were frozen since ``since`` (what
    :func:`frozen` said at the last reclaim), walk the whole heap once (unfreeze, collect,
    freeze again: the one long pause, for an idle moment); whether it did."""
    if frozen() - since < RECLAIM_AFTER:
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return True
