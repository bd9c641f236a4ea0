"""Metric lines shared by the app's panels and the CLI's tables."""

from __future__ import annotations

from rich.text import Text

from engine import Metrics


def _fmt(value: float | None, spec: str = ".2f") -> str:
    """The value as ``spec``; one that rounds to zero is ``0.00``, never ``-0.00``."""
    if value is None:
        return "–"
    text = format(value, spec)
    return text.removeprefix("-") if float(text.rstrip("%")) == 0 else text


def _percent(value: float | None) -> str:
    return _fmt(value, ".0f") + ("%" if value is not None else "")


def _cells(m: Metrics, short: bool = False) -> list[tuple[str, str]]:
    """The metrics as (label, value) pairs, in Tab. 1's order."""
    return [
        ("Fav", _fmt(m.mean_fav)),
        ("S", _fmt(m.mean_emotion)),
        ("recip", _fmt(m.reciprocity)),
        ("E-I", _fmt(m.ei_index)),
        ("bal" if short else "balance", _percent(m.balance)),
        ("repair", _percent(m.repair)),
    ]


def _line(cells: list[tuple[str, str]]) -> Text:
    text = Text()
    for i, (label, value) in enumerate(cells):
        text.append(("  " if i else "") + f"{label} ", style="dim")
        text.append(value)
    return text


def metrics_line(m: Metrics) -> Text:
    """One line of the Sociodrama metrics (Tab. 1)."""
    return _line(_cells(m))


def metrics_block(m: Metrics) -> Text:
    """The metrics one per line, for narrow panels."""
    rows = [
        ("mean Fav", _fmt(m.mean_fav)),
        ("mean S", _fmt(m.mean_emotion)),
        ("reciprocity", _fmt(m.reciprocity)),
        ("E-I index", _fmt(m.ei_index)),
        ("balance", _percent(m.balance)),
        ("repair", _percent(m.repair)),
    ]
    return Text("\n").join(Text.assemble((f"{k:<12}", "dim"), v) for k, v in rows)


def metrics_pair(m: Metrics) -> Text:
    """The metrics on two short lines, for a short panel."""
    cells = _cells(m, short=True)
    return Text("\n").join([_line(cells[:3]), _line(cells[3:])])
