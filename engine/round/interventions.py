"""Interventions checked before they are queued for the next round, and taken off the queue."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.lexicon import infer_stance
from ..core.rules import validate_action
from ..core.state import ForcedAction, Mode, Pending, ScenarioEvent
from ..errors import InterventionError


def forced_action(action: ForcedAction, names: Sequence[str]) -> ForcedAction:
    """``action`` checked against the cast and the rules, its stance inferred when unset."""
    if action.agent not in names:
        raise InterventionError(f"force: unknown agent {action.agent!r}")
    validate_action(action.agent, action.mode, action.target, names)
    if action.mode is not Mode.SILENT and not action.utterance.strip():
        raise InterventionError(f"force: {action.agent} needs an utterance to speak")
    if action.stance is None:
        action = action.model_copy(update={"stance": infer_stance(action.utterance)})
    return action


def injected_event(
    text: str,
    names: Sequence[str],
    private_to: Sequence[str] | None = None,
    valence: float | None = None,
    about: Sequence[str] = (),
    implicates: Sequence[str] | None = None,
) -> ScenarioEvent:
    """An injected event, its agents checked against the cast and its valence within -1..1
    (what is not given is read from the text when the event is played)."""
    if not text.strip():
        raise InterventionError("inject: the event text is empty")
    for field, named in (("private_to", private_to), ("about", about), ("implicates", implicates)):
        for who in named or []:
            if who not in names:
                raise InterventionError(f"inject: unknown agent {who!r} in {field}")
    if valence is not None and not -1.0 <= valence <= 1.0:
        raise InterventionError(f"inject: valence {valence} is outside -1..1")
    return ScenarioEvent(
        text=text.strip(),
        private_to=list(private_to) if private_to else None,
        source="injected",
        valence=valence,
        about=list(about),
        implicates=None if implicates is None else list(implicates),
    )


def without(pending: Pending, items: Iterable[object]) -> Pending:
    """``pending`` less the very intervention objects ``items`` (by identity: an equal one
    queued again stays)."""
    gone = {id(item) for item in items}
    return Pending(
        forced=[f for f in pending.forced if id(f) not in gone],
        events=[e for e in pending.events if id(e) not in gone],
    )
