"""Interventions queued for a run's next round, one line each (the app and the CLI)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.meaning import meaning_of
from engine.core.state import ForcedAction, Mode, ScenarioEvent


def describe(item: ForcedAction | ScenarioEvent, names: Sequence[str]) -> str:
    """A queued forced turn or event as a line: what it does and, for an event, its meaning
    (marked "read from the text" where the engine infers it)."""
    if isinstance(item, ForcedAction):
        if item.mode is Mode.SILENT:
            return f"force {item.agent}: silent"
        return f"force {item.agent}: {item.mode.value} → {item.target or 'all'}: {item.utterance}"
    return f"event: {item.text} ({meaning_line(item, names)})"


def meaning_line(event: ScenarioEvent, names: Sequence[str], marked: bool = True) -> str:
    """An event's meaning in words: its valence (``marked`` "read from the text" when the
    engine infers it), whom it touches and implicates."""
    m = meaning_of(event, names)
    read = marked and event.valence is None and event.tone == "neutral"
    parts = [f"valence {m.valence:+.2f}" + (" read from the text" if read else "")]
    parts.append("touches " + (", ".join(m.touches) if m.touches else "everyone"))
    if m.implicates:
        parts.append("implicates " + ", ".join(m.implicates))
    if event.private_to:
        parts.append("seen by " + ", ".join(event.private_to))
    return "; ".join(parts)


def queue_lines(queue: Sequence[ForcedAction | ScenarioEvent], names: Sequence[str]) -> list[str]:
    """The queue numbered from 1, as ``queue --remove N`` and the app's list count."""
    return [f"{k}. {describe(item, names)}" for k, item in enumerate(queue, 1)]
