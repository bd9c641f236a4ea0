"""The arms of a trial: what each branch of the common prefix does differently — a scenario's
ready-made intervention, a scripted injection, a forced action, or a relational prior — and
the command-line syntax of each."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ...core.priors import Prior
from ...core.scenario import Scenario
from ...core.state import ForcedAction, Mode
from ...errors import SocialsimError

#: The arm that changes nothing: the prefix played on.
NONE = "none"


class Injection(BaseModel):
    """An event injected into one round (a round of the run, after the fork)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    round: int
    text: str


class Forcing(BaseModel):
    """An agent's action forced in one round (after the fork)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    round: int
    action: ForcedAction


class Arm(BaseModel):
    """One branch of every seed's prefix; ``none`` changes nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    intervention: str | None = None
    inject: list[Injection] = []
    force: list[Forcing] = []
    prior: Prior | None = None
    #: What it does, for tables (the prior as given, an injection's text).
    detail: str = ""

    def describe(self) -> str:
        """The arm in a few words."""
        if self.intervention:
            return f"intervention {self.intervention}"
        return self.detail or "no change from the fork on"


def _at(text: str, option: str, fork_at: int, rounds: int) -> tuple[str, int]:
    """``BODY@ROUND`` with ROUND a round after the fork."""
    body, sep, when = text.rpartition("@")
    if not sep or not body.strip():
        raise SocialsimError(f'{option} {text!r}: give TEXT@ROUND, e.g. "..."@{fork_at + 1}')
    try:
        round_no = int(when)
    except ValueError:
        raise SocialsimError(f"{option} {text!r}: {when!r} is not a round number") from None
    if not fork_at < round_no <= rounds:
        raise SocialsimError(
            f"{option} {text!r}: round {round_no} is not after the fork (rounds "
            f"{fork_at + 1}..{rounds})"
        )
    return body.strip(), round_no


def named_arms(text: str, scenario: Scenario) -> list[Arm]:
    """``--arms none,neglect,...``: ``none`` and the scenario's interventions."""
    arms = []
    for name in (t.strip() for t in text.split(",")):
        if not name:
            continue
        if name == NONE:
            arms.append(Arm(name=NONE))
        elif name in scenario.interventions:
            arms.append(Arm(name=name, intervention=name))
        else:
            known = ", ".join([NONE, *scenario.interventions])
            raise SocialsimError(f"--arms: unknown arm {name!r}; known: {known}")
    return arms


def injection_arm(text: str, k: int, fork_at: int, rounds: int) -> Arm:
    """``--inject "TEXT"@ROUND``: a public event in that round; the arm ``inject-k``."""
    body, round_no = _at(text, "--inject", fork_at, rounds)
    return Arm(
        name=f"inject-{k}",
        inject=[Injection(round=round_no, text=body)],
        detail=f"R{round_no}: {body}",
    )


def forcing_arm(text: str, k: int, scenario: Scenario, fork_at: int, rounds: int) -> Arm:
    """``--force AGENT:MODE[:TARGET[:UTTERANCE]]@ROUND``: that action in that round; the arm
    ``force-k``."""
    from ...core.lexicon import infer_stance
    from ...core.rules import validate_action

    body, round_no = _at(text, "--force", fork_at, rounds)
    agent, _, rest = body.partition(":")
    mode_text, _, rest = rest.partition(":")
    target, _, utterance = rest.partition(":")
    try:
        mode = Mode(mode_text.strip())
    except ValueError:
        raise SocialsimError(f"--force {text!r}: mode must be public, private or silent") from None
    if agent not in scenario.names:
        raise SocialsimError(f"--force {text!r}: no agent {agent!r}")
    chosen = target.strip() or None
    try:
        validate_action(agent, mode, chosen, scenario.names)
    except SocialsimError as err:
        raise SocialsimError(f"--force {text!r}: {err}") from None
    if mode is not Mode.SILENT and not utterance.strip():
        raise SocialsimError(f"--force {text!r}: a spoken action needs an utterance")
    action = ForcedAction(
        agent=agent,
        mode=mode,
        target=chosen,
        utterance=utterance.strip(),
        stance=infer_stance(utterance) if utterance.strip() else None,
    )
    return Arm(
        name=f"force-{k}",
        force=[Forcing(round=round_no, action=action)],
        detail=f"R{round_no}: {agent} {mode.value}" + (f" → {chosen}" if chosen else ""),
    )


def prior_arm(text: str, k: int, names: Sequence[str]) -> Arm:
    """``--prior-arm SPEC``: the relational prior SPEC from the fork on; the arm ``prior-k``."""
    from ...core.priors import parse_prior

    return Arm(name=f"prior-{k}", prior=parse_prior(text, names), detail=f"prior {text}")


def check_arms(arms: Sequence[Arm]) -> None:
    """At least two arms, each name once."""
    names = [a.name for a in arms]
    if len(arms) < 2:
        raise SocialsimError("a trial needs at least two arms (the first is the control)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SocialsimError(f"--arms: {', '.join(twice)} given twice")
