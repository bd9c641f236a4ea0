"""Colours and glyphs shared by the widgets (chosen to read well in 256 colours)."""

from __future__ import annotations

from engine import Status

STATUS_GLYPH = {Status.ALLY: "+", Status.NEUTRAL: "·", Status.RIVAL: "~", Status.ENEMY: "x"}


def fav_style(fav: float) -> str:
    """Foreground colour for a favorability value."""
    if fav >= 0.55:
        return "bold green"
    if fav >= 0.15:
        return "green"
    if fav > -0.1:
        return "default"
    if fav > -0.5:
        return "yellow"
    return "bold red"


def emotion_style(value: float) -> str:
    """Colour of an emotion value: red (negative) to green (positive)."""
    if value >= 0.65:
        return "green"
    if value >= 0.45:
        return "default"
    if value >= 0.3:
        return "yellow"
    return "red"


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of ``width`` cells filled to ``fraction`` (eighth-cell precision)."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[part] if part else ""
    return ("█" * full + partial).ljust(width, "░")[:width]
