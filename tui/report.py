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


def metrics_line(m: Metrics) -> Text:
    """One line of the Sociodrama metrics (Tab. 1)."""
    return Text.assemble(
        ("Fav ", "dim"),
        _fmt(m.mean_fav),
        ("  S ", "dim"),
        _fmt(m.mean_emotion),
        ("  recip ", "dim"),
        _fmt(m.reciprocity),
        ("  E-I ", "dim"),
        _fmt(m.ei_index),
        ("  balance ", "dim"),
        _fmt(m.balance, ".0f") + ("%" if m.balance is not None else ""),
        ("  repair ", "dim"),
        _fmt(m.repair, ".0f") + ("%" if m.repair is not None else ""),
    )


def metrics_block(m: Metrics) -> Text:
    """The metrics one per line, for narrow panels."""
    rows = [
        ("mean Fav", _fmt(m.mean_fav)),
        ("mean S", _fmt(m.mean_emotion)),
        ("reciprocity", _fmt(m.reciprocity)),
        ("E-I index", _fmt(m.ei_index)),
        ("balance", _fmt(m.balance, ".0f") + ("%" if m.balance is not None else "")),
        ("repair", _fmt(m.repair, ".0f") + ("%" if m.repair is not None else "")),
    ]
    return Text("\n").join(Text.assemble((f"{k:<12}", "dim"), v) for k, v in rows)


def metrics_pair(m: Metrics) -> Text:
    """The metrics on two short lines, for a short panel."""
    return Text.assemble(
        ("Fav ", "dim"),
        _fmt(m.mean_fav),
        ("  S ", "dim"),
        _fmt(m.mean_emotion),
        ("  recip ", "dim"),
        _fmt(m.reciprocity),
        "\n",
        ("E-I ", "dim"),
        _fmt(m.ei_index),
        ("  bal ", "dim"),
        _fmt(m.balance, ".0f") + ("%" if m.balance is not None else ""),
        ("  repair ", "dim"),
        _fmt(m.repair, ".0f") + ("%" if m.repair is not None else ""),
    )
