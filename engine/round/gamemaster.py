"""The game master (EduMirror Sec. 3): narrates each round's time and place along the
scenario's schedule, and enforces its rules by announcing who broke one last round."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..core.played import PastActs
from ..core.scenario import Scenario
from ..core.state import Mode, ScenarioEvent

if TYPE_CHECKING:
    from ..minds import Mind


def violations(scenario: Scenario, record: PastActs) -> list[str]:
    """Rule breaches in a round: an utterance containing one of a rule's cue words."""
    found = []
    for action in record.actions:
        if action.mode is Mode.SILENT:
            continue
        words = action.utterance.lower()
        for rule in scenario.rules:
            if any(re.search(rf"\b{re.escape(cue.lower())}\b", words) for cue in rule.cues):
                found.append(f"{action.speaker} broke a rule ({rule.text})")
                break
    return found


def scripted_narration(scenario: Scenario, round_no: int, last: PastActs | None) -> str | None:
    """``08:20, corridor.`` plus the rules whenever the scene moves, plus the breaches of
    the ``last`` round."""
    if not scenario.schedule and not scenario.rules:
        return None
    parts = []
    if scenario.schedule:
        steps = scenario.schedule
        step = steps[min(round_no, len(steps)) - 1]
        parts.append(f"{step.time}, {step.location}.")
        moved = round_no == 1 or steps[min(round_no - 1, len(steps)) - 1].location != step.location
        if moved and scenario.rules:
            parts.append("Rules here: " + "; ".join(r.text for r in scenario.rules) + ".")
    elif round_no == 1:
        parts.append("Rules: " + "; ".join(r.text for r in scenario.rules) + ".")
    if last is not None and last.round > 0:
        parts += [f"The game master notes that {v}." for v in violations(scenario, last)]
    return " ".join(parts) or None


async def narrate(
    scenario: Scenario, round_no: int, last: PastActs | None, mind: Mind
) -> ScenarioEvent | None:
    """The round's narration event (after the ``last`` round): scripted, or told by the LLM
    when the scenario asks."""
    text = scripted_narration(scenario, round_no, last)
    if text is None:
        return None
    if scenario.narrator == "llm":
        text = await mind.narrate(scenario, round_no, text) or text
    return ScenarioEvent(text=text, source="narrator")
