"""The offline value-driven planner (EduMirror App. E.2), by rule.

Generate N = 3 candidate actions, imagine the agent's need state after each, score each
by the agent's SVO (own gap reduction vs. inferred effect on others) and pick the best;
theta (Eq. 2) is computed from the chosen candidate.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..core.needs import Need
from ..core.rules import apply_need
from ..core.state import ALL, Mode, Stance
from ..core.values import gap, s_self, svo_utility, theta
from .base import AgentContext

N_CANDIDATES = 3
#: Effect of performing an action on the actor's own needs (imagined, before the reply).
OWN_EFFECTS: dict[str, dict[str, float]] = {
    "speak": {"sense_of_control": 0.2, "passion_and_motivation": 0.15},
    "oppose": {"sense_of_superiority": 0.35, "sense_of_respect": 0.1},
    "support": {"group_acceptance": 0.25, "support_system": 0.2},
    "confide": {"support_system": 0.35, "emotional_safety": 0.1},
    "silent": {"passion_and_motivation": -0.15, "sense_of_control": -0.15},
}
#: Inferred effect on the target's (or everyone's) needs.
OTHERS_EFFECT = {"support": 0.5, "oppose": -0.6, "neutral": 0.1, "confide": 0.3}
RETALIATION = 0.35  # imagined loss of safety when opposing someone who is not an ally
SHELTER = 0.3  # imagined gain of safety from keeping quiet after being attacked


@dataclass(frozen=True)
class Candidate:
    """One imagined action and how it would leave the agent's needs."""

    stance: Stance
    target: str | None
    mode: Mode
    own_gain: float
    others_gain: float
    utility: float
    theta: float


def imagine(
    ctx: AgentContext, stance: Stance, target: str | None, mode: Mode, attacked: bool
) -> tuple[dict[str, Need], float]:
    """The agent's imagined needs after the action, and the inferred effect on others."""
    deltas: dict[str, float] = {}

    def add(effects: dict[str, float]) -> None:
        for need, d in effects.items():
            deltas[need] = deltas.get(need, 0.0) + d

    others = 0.0
    if mode is Mode.SILENT:
        add(OWN_EFFECTS["silent"])
        if attacked:
            add({"psychological_safety": SHELTER})
    else:
        add(OWN_EFFECTS["speak"])
        kind = "confide" if mode is Mode.PRIVATE and stance == "neutral" else stance
        if kind in OWN_EFFECTS:
            add(OWN_EFFECTS[kind])
        view = ctx.view
        known = target is not None and target != ctx.name and target in view.index
        if kind == "oppose" and known and view.fav(target or "") < 0.3:
            add({"psychological_safety": -RETALIATION})
        others = OTHERS_EFFECT.get(kind, 0.0)
        if target == ALL:
            others *= 0.5
    needs = {
        n: v._replace(current=apply_need(v.current, deltas.get(n, 0.0)))
        for n, v in ctx.view.needs.items()
    }
    return needs, others


def plan(
    ctx: AgentContext,
    rng: random.Random,
    options: list[tuple[float, Stance, str, Mode]],
    attacked: bool,
) -> Candidate:
    """Sample N candidates from the weighted options (plus silence), pick the SVO-best."""
    pool = list(options)
    chosen: list[tuple[Stance, str | None, Mode]] = []
    while pool and len(chosen) < N_CANDIDATES - 1:
        pick = rng.random() * sum(w for w, *_ in pool)
        for k, (w, stance, target, mode) in enumerate(pool):
            pick -= w
            if pick <= 0 or k == len(pool) - 1:
                chosen.append((stance, target, mode))
                del pool[k]
                break
    chosen.append(("neutral", None, Mode.SILENT))
    before = sum(gap(v) for v in ctx.view.needs.values())
    candidates = []
    for stance, chosen_target, mode in chosen:
        needs, others = imagine(ctx, stance, chosen_target, mode, attacked)
        own = before - sum(gap(v) for v in needs.values())
        candidates.append(
            Candidate(
                stance=stance,
                target=chosen_target,
                mode=mode,
                own_gain=own,
                others_gain=others,
                utility=svo_utility(ctx.persona.svo, own, others),
                theta=theta(s_self(needs), max(0.0, others) * 10.0),
            )
        )
    return max(candidates, key=lambda c: c.utility)
