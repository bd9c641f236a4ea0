"""Colours and glyphs shared by the widgets (chosen to read well in 256 colours, and to say
the same in glyphs where colour is off: ``NO_COLOR``)."""

from __future__ import annotations

from engine import Status

STATUS_GLYPH = {Status.ALLY: "+", Status.NEUTRAL: "·", Status.RIVAL: "~", Status.ENEMY: "x"}
#: A need met, a small gap, a large gap: the glyph beside the colour.
GAP_GLYPH = {"met": "✓", "small": "!", "large": "✗"}
GAP_STYLE = {"met": "green", "small": "yellow", "large": "red"}


def gap_level(expected: float, current: float) -> str:
    """``met`` (gap at most 0.5), ``small`` (at most 2) or ``large``, on the 0-10 scale."""
    gap = expected - current
    return "met" if gap <= 0.5 else "small" if gap <= 2.0 else "large"


def signed(value: float, digits: int = 2) -> str:
    """``+0.05``, ``-0.12``; a value that rounds to zero is ``0.00``, never ``-0.00``."""
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


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


#: The emotion bands of :func:`emotion_style` as glyphs, for where colour is off (NO_COLOR):
#: high, middling, low, very low.
MOOD_GLYPH = {"green": "▲", "default": "■", "yellow": "▽", "red": "▼"}


def mood_glyph(value: float) -> str:
    """The glyph of an emotion value's band (``▲`` at 0.65 and up ... ``▼`` under 0.3)."""
    return MOOD_GLYPH[emotion_style(value)]


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of ``width`` cells filled to ``fraction`` (eighth-cell precision)."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[part] if part else ""
    return ("█" * full + partial).ljust(width, "░")[:width]
