"""EduMirror's value system (EduMirror Sec. 3.3, App. E): needs from traits, gaps, SVO.

* Tab. 9: each need has a personality trait; "<degree> <trait>" sets its expected value
  (slightly 7.5, moderately 8, quite 8.5, extremely 9).
* The unmet-need gap is clip(v* - v, 0, S_max).
* S_self sums the agent's own gaps and S_other the inferred effect of its action on the
  others' needs, each clipped to [0, S_max]; theta = arctan((S_other + eps) / (S_self + eps))
  (Eq. 2) lies in [0, pi/2]: small = self-dominant, large = other-regarding.
* The stable SVO target is an angle on the self/other plane (Murphy et al., 2011);
  a planner values an action by cos(angle) * own gain + sin(angle) * others' gain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Protocol

S_MAX = 10.0
EPSILON = 1e-6
#: The ideal-type angles (degrees) of the four SVO categories (Murphy et al., 2011:
#: altruistic > 57.15, prosocial 22.45..57.15, individualistic -12.04..22.45, competitive
#: < -12.04).
SVO_ANGLE = {
    "altruistic": 61.39,
    "prosocial": 37.48,
    "individualistic": -7.82,
    "competitive": -16.26,
}


class NeedLevel(Protocol):
    """A need's current and expected value (a :class:`~.needs.Need` or a validated
    :class:`~.state.NeedState`)."""

    @property
    def current(self) -> float: ...

    @property
    def expected(self) -> float: ...


def gap(value: NeedLevel) -> float:
    """Unmet-need gap clip(v* - v, 0, S_max)."""
    return min(S_MAX, max(0.0, value.expected - value.current))


def s_self(needs: Mapping[str, NeedLevel]) -> float:
    """The agent's own unmet needs, summed and clipped to [0, S_max]."""
    return min(S_MAX, sum(gap(v) for v in needs.values()))


def theta(self_signal: float, other_signal: float) -> float:
    """Eq. 2, in degrees: arctan((S_other + eps) / (S_self + eps)), in [0, 90]."""
    other = min(S_MAX, max(0.0, other_signal))
    own = min(S_MAX, max(0.0, self_signal))
    return math.degrees(math.atan((other + EPSILON) / (own + EPSILON)))


def svo_utility(svo: str, own_gain: float, others_gain: float) -> float:
    """How an agent with this SVO values an outcome for itself and for others."""
    angle = math.radians(SVO_ANGLE[svo])
    return math.cos(angle) * own_gain + math.sin(angle) * others_gain


def svo_angle(self_mean: float, other_mean: float) -> float:
    """The standard slider SVO angle: atan((mean other - 50) / (mean self - 50)) in degrees."""
    return math.degrees(math.atan2(other_mean - 50.0, self_mean - 50.0))


def svo_category(angle: float) -> str:
    """Murphy et al.'s category of an SVO angle."""
    if angle > 57.15:
        return "altruistic"
    if angle > 22.45:
        return "prosocial"
    if angle > -12.04:
        return "individualistic"
    return "competitive"


def describe(value: float) -> str:
    """The qualitative description of a 0-10 need value fed to prompts (App. E.1)."""
    if value >= 8.5:
        return "fully satisfied"
    if value >= 7:
        return "mostly satisfied"
    if value >= 5:
        return "somewhat lacking"
    if value >= 3:
        return "clearly unmet"
    return "severely unmet"
