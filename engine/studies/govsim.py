"""GovSim, the fishing commons (Piatti et al. 2024), as in Relational priors Sec. 4.1, App. A.

Resource dynamics (App. A.1). At the start of month ``t`` the lake holds ``h(t)`` tons
(``h(1) = 100``). In the harvest phase every agent privately and simultaneously chooses a
catch ``r_{i,t}`` (at most the available stock); the catches and the remaining stock
``h(t) - Σ r_{i,t}`` are then disclosed to everyone, and the agents discuss. The stock then
regenerates (Eq. 4)::

    h(t+1) = min(2 · (h(t) - Σ_i r_{i,t}), 100)

The episode ends after ``T = 12`` months or when the stock collapses, i.e. falls below
``C = 5``. The sustainability threshold is ``f(t) = h(t) / 2``, the most the group can take
without shrinking next month's stock; its equal per-agent share is ``f(t) / n``.

Here each month is one engine round: the harvest is decided outside the round (one
question per agent to the run's mind: the offline rule, or the agent's model), the
disclosure is injected as the round's event, and ``Simulation.advance()`` plays the discussion
with the engine's usual speaking machinery, emotion and relation updates. A relational
prior only changes the agents' system prompts (and, offline, the harvest rule reads its
signs); the protocol is the same for every prior.

Departures worth knowing:

* When the catches asked for exceed the stock, the stock is shared in proportion to the
  requests (GovSim's "proportional" assignment, without its integer rounding).
* The discussion of the month that collapses the lake still takes place (as in GovSim).
* Over-usage is reported against both readings of the threshold, the per-agent share
  ``f(t) / n`` (``over_usage``, the one the score S uses) and the group's ``f(t)``
  (``over_usage_group``, App. A.2 as printed); see :func:`metrics`.
* Harvest questions are asked at temperature 0.8 (Sec. 4.1) whatever the run's; the
  discussion plays at the run's temperature, which :func:`paper_settings` sets to 0.8.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from ..core.priors import Prior
from ..core.scenario import Scenario, parse_scenario
from ..core.state import AgentState, ScenarioEvent
from ..errors import BudgetError, SaveError, SocialsimError
from ..llm.settings import LLMSettings
from ..minds import Mind, Question, prompts
from ..minds.spec import OFFLINE, MindSpec
from ..round.simulation import Simulation
from ..saves.store import SaveStore
from .studyfile import Shown, read_study, write_study

CAPACITY = 100
COLLAPSE = 5
MONTHS = 12
#: Sampling temperature of the agents (Relational priors Sec. 4.1).
TEMPERATURE = 0.8
#: The team sizes the paper evaluates (Sec. 4.1): complete networks with three agents;
#: complete, chain, star and tree with five.
TEAM_SIZES = (3, 5)
#: Agent names, in order (three-agent runs use the first three).
NAMES: tuple[str, ...] = ("John", "Kate", "Jack", "Emma", "Luke")
#: Eq. 5 weights: survival time, survival rate, total gain, equality, over-usage.
WEIGHTS = {"m": 2 / 8, "q": 2 / 8, "R": 1 / 8, "e": 1 / 8, "o": 2 / 8}

# -- the offline harvest rule ------------------------------------------------------------------
#: Catch as a multiple of the sustainable share h/(2n) for an agent with no feelings either
#: way: slightly greedy, so that an unregulated lake declines slowly.
GREED = 1.2
#: How much mean favorability toward the others (in [-1, 1]) lowers that multiple.
GOODWILL = 0.9
#: How far a stated edge's sign moves the goodwill toward that peer (the favorability a
#: +1 / -1 edge is worth, on top of the one the discussion builds).
PRIOR_GOODWILL = 0.6
#: How much the others' over-harvesting last month raises it (tit for tat), scaled down
#: by goodwill.
RECIPROCITY = 0.3
#: Uniform noise on the multiple, drawn from the run seed.
NOISE = 0.15


class GovSimMonth(BaseModel):
    """One month: the stock before, the catches taken, the stock after regeneration."""

    month: int
    stock_before: float
    harvests: dict[str, float]
    stock_after: float
    collapsed: bool
    #: The catches asked for (after clamping to 0..stock), before any rationing.
    requested: dict[str, float] = {}
    #: Each agent's answer as given, before clamping (a model's may be out of 0..stock;
    #: -1: no usable answer).
    answered: dict[str, int] = {}

    @property
    def rationed(self) -> bool:
        """The requests exceeded the stock, so it was shared out in proportion."""
        return sum(self.requested.values()) > self.stock_before

    def clamps(self) -> dict[str, tuple[int, float]]:
        """The answers clamped to 0..stock: agent -> (answered, asked)."""
        return {
            n: (a, self.requested[n])
            for n, a in self.answered.items()
            if n in self.requested and a != self.requested[n]
        }

    def line(self) -> str:
        """The month as printed: the stock, each agent's request beside its catch, the
        rationing and the clamps."""
        catches = ", ".join(
            f"{n} asked {_num(self.requested.get(n, r))} got {_num(r)}"
            for n, r in self.harvests.items()
        )
        text = (
            f"month {self.month:>2}: stock {self.stock_before:6.1f} → {self.stock_after:6.1f}"
            f"  {catches}"
        )
        if self.rationed:
            asked = _num(sum(self.requested.values()))
            text += f"; {asked} asked of {_num(self.stock_before)}: rationed pro rata"
        clamped = self.clamps()
        if clamped:
            text += (
                "; clamped to 0.."
                + _num(self.stock_before)
                + ": "
                + ", ".join(
                    f"{n} answered {'nothing usable' if a == -1 else a} → {_num(r)}"
                    for n, (a, r) in clamped.items()
                )
            )
        return text + ("  [collapse]" if self.collapsed else "")


def _num(x: float) -> str:
    return f"{x:.3g}" if x != int(x) else str(int(x))


class GovSimLog(BaseModel):
    """The study file of a saved episode (engine/studies/studyfile.py): its months so far,
    the last one's saved before its discussion round is played."""

    study: Literal["govsim"] = "govsim"
    months: list[GovSimMonth] = []


class GovSimResult(BaseModel):
    """A whole episode: its months, the App. A.2 metrics and the saved run (if any)."""

    months: list[GovSimMonth]
    metrics: dict[str, float]
    run_id: str | None = None
    #: Model harvest answers that were out of 0..stock (clamped) or unusable (taken as 0).
    out_of_range: int = 0
    #: Why the episode stopped early (an LLM call or budget cap), if it did.
    stopped: str | None = None


# -- dynamics ---------------------------------------------------------------------------------


def next_stock(h: float, harvests: Sequence[float]) -> float:
    """Eq. 4: ``min(2 · (h - Σ r), 100)``, never below 0."""
    return max(0.0, min(2.0 * (h - sum(harvests)), float(CAPACITY)))


def sustainable_share(h: float, n_agents: int) -> float:
    """The per-agent share ``f(t) / n = h / (2n)`` of the sustainability threshold."""
    return h / (2.0 * n_agents)


def max_total_gain(horizon: int = MONTHS) -> float:
    """The most the whole group can catch in ``horizon`` months from a full lake.

    Taking more than half the stock costs two tons of next month's stock per extra ton, and
    taking less is wasted by the cap of 100, so the optimum takes 50 a month and the whole
    lake in the last month: ``50 · (T - 1) + 100`` (650 for T = 12).
    """
    return CAPACITY / 2 * (horizon - 1) + CAPACITY if horizon >= 1 else 0.0


def ration(requested: dict[str, float], stock: float) -> dict[str, float]:
    """The catches actually taken: as asked, or shared in proportion when the requests
    exceed the stock."""
    total = sum(requested.values())
    if total <= stock or total <= 0:
        return dict(requested)
    return {n: r * stock / total for n, r in requested.items()}


# -- metrics (App. A.2) --------------------------------------------------------------------------


def metrics(
    months: Sequence[GovSimMonth], n_agents: int, *, horizon: int = MONTHS
) -> dict[str, float]:
    """The five GovSim metrics of Relational priors App. A.2 and the weighted score S of Eq. 5.

    * ``survival_months`` — m = max{t | h(t) > C}, the last month that started above the
      collapse threshold (0 for no months); ``survival_time`` = m / T (T = ``horizon``).
    * ``survived`` — 1 if m = T else 0; its mean over runs is the survival rate
      q = #{m = 12} / #runs.
    * ``total_gain`` — R = (1/|I|) Σ_i R_i with R_i = Σ_t r_{i,t}: tons per agent.
    * ``equality`` — e = 1 - Σ_i Σ_j |R_i - R_j| / (2 |I| Σ_i R_i) (1 - Gini; 1 when
      nobody caught anything).
    * ``over_usage`` — o = Σ_i Σ_t 1(r_{i,t} > f(t)/|I|) / (|I| · m), over the months of the
      survival period: each action against its per-agent share h(t)/(2|I|), as the GovSim
      environment does (its "sustainability threshold" is (h // 2) // n, the figure its
      prompts call the most *each* fisher can take; here without the integer rounding).
    * ``over_usage_group`` — the same count against App. A.2's f(t) = h(t)/2 as printed,
      the most the whole group can take: a single catch exceeds it only when one agent
      takes more than half the lake.
    * ``score`` — S = w1·m̃ + w2·q̃ + w3·R̃ + w4·ẽ + w5·õ (Eq. 5), w1 = w2 = w5 = 2/8,
      w3 = w4 = 1/8, each metric normalized by its theoretical maximum with larger meaning
      better: m̃ = m/T, q̃ = q, R̃ = Σ_i R_i / :func:`max_total_gain` (T), ẽ = e,
      õ = 1 - ``over_usage`` (the per-agent reading: under the group reading a team of
      three taking 40 tons each from a full lake empties it without a single over-use).
      S lies in [0, 1]; the Relational priors paper reports it in points (×100).
    """
    if n_agents < 1:
        raise SocialsimError(f"metrics: n_agents must be at least 1, got {n_agents}")
    if horizon < 1:
        raise SocialsimError(f"metrics: horizon must be at least 1, got {horizon}")
    m = min(
        horizon,
        max((t for t, mo in enumerate(months, 1) if mo.stock_before > COLLAPSE), default=0),
    )
    q = 1.0 if m >= horizon else 0.0
    gains: dict[str, float] = {}
    for mo in months:
        for name, r in mo.harvests.items():
            gains[name] = gains.get(name, 0.0) + r
    values = list(gains.values()) + [0.0] * max(0, n_agents - len(gains))
    total = sum(values)
    gain = total / n_agents
    if total > 0:
        spread = sum(abs(a - b) for a in values for b in values)
        equality = 1.0 - spread / (2 * n_agents * total)
    else:
        equality = 1.0
    over = _over_uses(months[:m], lambda h: sustainable_share(h, n_agents))
    over_group = _over_uses(months[:m], lambda h: h / 2)
    actions = n_agents * m
    over_usage = over / actions if m else 0.0
    best = max_total_gain(horizon)
    score = (
        WEIGHTS["m"] * m / horizon
        + WEIGHTS["q"] * q
        + WEIGHTS["R"] * (min(1.0, total / best) if best else 0.0)
        + WEIGHTS["e"] * equality
        + WEIGHTS["o"] * (1.0 - over_usage)
    )
    return {
        "survival_time": m / horizon,
        "survival_months": float(m),
        "survived": q,
        "total_gain": gain,
        "equality": equality,
        "over_usage": over_usage,
        "over_usage_group": over_group / actions if m else 0.0,
        "score": score,
    }


def _over_uses(months: Sequence[GovSimMonth], limit: Callable[[float], float]) -> int:
    """How many catches exceed ``limit(h(t))`` of their month."""
    return sum(
        1 for mo in months for r in mo.harvests.values() if r > limit(mo.stock_before) + 1e-9
    )


def paper_settings(spec: MindSpec) -> MindSpec:
    """``spec`` as the paper plays GovSim: LLM settings at temperature 0.8 (Sec. 4.1), so the
    discussion samples as the harvests do; the offline mind unchanged."""
    if isinstance(spec, LLMSettings):
        return spec.model_copy(update={"temperature": TEMPERATURE})
    return spec


# -- the scenario ------------------------------------------------------------------------------


def govsim_scenario(n_agents: int = 3, months: int = MONTHS) -> Scenario:
    """The fishing-commons scenario: a homogeneous team of fishers, one round per month."""
    if not 2 <= n_agents <= len(NAMES):
        raise SocialsimError(f"GovSim: n_agents must be 2..{len(NAMES)}, got {n_agents}")
    if months < 1:
        raise SocialsimError(f"GovSim: months must be at least 1, got {months}")
    agents = [
        {
            "name": name,
            "role": "a fisher who makes a living from the shared lake",
            "archetype": "balanced",
            "traits": ["practical", "hard-working"],
            "goal": "earn a good income from fishing over the whole year",
            "talking_points": [
                "the lake only doubles what we leave in it",
                "if each of us keeps to a fair share, the lake stays full",
                "I have a family to feed and need a decent catch",
                "what we catch this month decides what is left next month",
            ],
        }
        for name in NAMES[:n_agents]
    ]
    return parse_scenario(
        {
            "id": "govsim",
            "title": "Fishing commons (GovSim)",
            "description": (
                f"{n_agents} fishers share a lake that holds at most {CAPACITY} tons of fish. "
                "Each month every fisher privately decides how many tons to catch; the "
                "catches are then disclosed and the fishers talk. The fish left in the lake "
                f"double by next month, up to {CAPACITY} tons. If the lake falls below "
                f"{COLLAPSE} tons it collapses and nobody can fish again. Each ton caught is "
                f"income. The season lasts {months} months."
            ),
            "rounds": months,
            "agents": agents,
        },
        "govsim",
    )


def _disclosure(m: GovSimMonth) -> str:
    """The month's harvest as every fisher is told it: the catches; when the lake was
    oversubscribed, what each asked for; an answer that was out of range, as counted."""
    stock, taken = m.stock_before, m.harvests
    catches = ", ".join(f"{n} caught {_tons(r)}" for n, r in taken.items())
    total = sum(taken.values())
    text = (
        f"Month {m.month} harvest: the lake held {_tons(stock)}. {catches} "
        f"({_tons(total)} in total). {_tons(max(0.0, stock - total))} remain in the lake."
    )
    if m.rationed:
        asked = ", ".join(f"{n} {_tons(r)}" for n, r in m.requested.items())
        text += (
            " The fishers asked for more than the lake held, so it was shared out "
            f"(asked: {asked})."
        )
    for n, (a, r) in m.clamps().items():
        said = "no usable answer" if a == -1 else f"an answer of {_tons(a)}"
        text += f" {n} gave {said}, counted as {_tons(r)}."
    return text


def _tons(x: float) -> str:
    return f"{_num(x)} tons"


# -- harvest decisions --------------------------------------------------------------------------


def _rng(seed: int, month: int, name: str) -> random.Random:
    key = f"{seed}|govsim|{month}|{name}".encode()
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest()))


def offline_harvest(
    state: AgentState,
    stock: float,
    n_agents: int,
    rng: random.Random,
    others_last: float | None = None,
    stated: Mapping[str, int] | None = None,
) -> int:
    """The offline rule: a multiple of the sustainable share h/(2n), in whole tons.

    The multiple is ``GREED - GOODWILL · c + RECIPROCITY · (1 - c)/2 · (x - 1) ± NOISE``,
    where ``c`` is the agent's goodwill, the mean over the others of its favorability
    toward them (the discussion moves it) plus ``PRIOR_GOODWILL`` times the sign the
    relational prior states for that pair (``stated``: peer -> -1, 0 or +1; unstated pairs
    0), clipped to [-1, 1], and ``x`` the others' mean catch last month as a multiple of
    that month's share (the reciprocity term is positive only when they over-harvested).
    Warm relations mean restraint, hostile ones greed.
    """
    stated = stated or {}
    warmth = [r.fav + PRIOR_GOODWILL * stated.get(n, 0) for n, r in state.relations.items()]
    goodwill = max(-1.0, min(1.0, sum(warmth) / len(warmth))) if warmth else 0.0
    multiple = GREED - GOODWILL * goodwill
    if others_last is not None and others_last > 1.0:
        multiple += RECIPROCITY * (1.0 - goodwill) / 2.0 * (others_last - 1.0)
    multiple += rng.uniform(-NOISE, NOISE)
    catch = round(max(0.0, multiple) * sustainable_share(stock, n_agents))
    return int(min(max(catch, 0), stock))


class HarvestOut(BaseModel):
    """The harvest answer of one agent (no bounds: out-of-range answers are clamped)."""

    tons: int = Field(description="Whole tons of fish to catch this month.")


def _failed() -> HarvestOut:
    """What a failed harvest call yields: out of range, so it is counted and clamped to 0."""
    return HarvestOut(tons=-1)


async def _harvests(
    sim: Simulation, month: int, stock: float, played: Sequence[GovSimMonth]
) -> dict[str, int]:
    """Every agent's catch, asked of all at once: by the offline rule, or of the agent's model
    seeing what the agent saw."""
    n_agents = len(sim.scenario.names)
    event = ScenarioEvent(
        text=f"Month {month}: the lake holds {_tons(stock)} of fish before fishing.",
        source="narrator",
    )
    contexts = functools.cache(lambda: sim.contexts(month, [event]))
    task = (
        f"Harvest phase of month {month}: decide, privately and at the same time as the "
        f"others, how many tons of fish you will catch this month. The lake holds "
        f"{_tons(stock)}. Answer with a whole number of tons from 0 to {int(stock)}.\n"
        "tons: your catch this month."
    )

    def question(name: str) -> Question[HarvestOut]:
        return Question(
            purpose="harvest",
            key=f"r{month:04d}:harvest:{name}",
            agent=name,
            messages=lambda: prompts.ask(contexts()[name], task),
            schema=HarvestOut,
            offline=lambda: HarvestOut(
                tons=offline_harvest(
                    sim.state.agents[name],
                    stock,
                    n_agents,
                    _rng(sim.meta.seed, month, name),
                    _others_last(played, name),
                    _stated(sim.meta.prior, name),
                )
            ),
            fallback=_failed,
            temperature=TEMPERATURE,
        )

    names = sim.scenario.names
    answers = await asyncio.gather(*(sim.mind.ask(question(n)) for n in names))
    return {n: a.tons for n, a in zip(names, answers, strict=True)}


# -- the episode ----------------------------------------------------------------------------------


async def run_govsim(
    prior: Prior | None,
    *,
    n_agents: int = 3,
    seed: int = 0,
    mind: MindSpec | Mind = OFFLINE,
    months: int = MONTHS,
    store: SaveStore | None = None,
    run_id: str | None = None,
    name: str = "",
    on_month: Callable[[GovSimMonth], None] | None = None,
    shown: Shown | None = None,
) -> GovSimResult:
    """Play one GovSim episode under a relational prior (None or no-prior: no block) with
    ``n_agents`` fishers (the first of :data:`NAMES`; the paper's team sizes are 3 and 5,
    2 to 5 work), saved in ``store`` if given (:func:`play_govsim` goes on after a kill)."""
    sim = govsim_run(prior, n_agents, seed, mind, months, store, run_id, name)
    return await play_govsim(sim, on_month, shown)


def govsim_run(
    prior: Prior | None,
    n_agents: int = 3,
    seed: int = 0,
    mind: MindSpec | Mind = OFFLINE,
    months: int = MONTHS,
    store: SaveStore | None = None,
    run_id: str | None = None,
    name: str = "",
) -> Simulation:
    """A new GovSim episode's simulation (saved in ``store`` if given), not yet played."""
    label = prior.label if prior else "no-prior"
    return Simulation.new(
        govsim_scenario(n_agents, months),
        seed=seed,
        mind=mind,
        store=store,
        run_id=run_id,
        name=name or f"govsim {n_agents} agents {label} seed {seed}",
        scenario_ref="govsim",
        prior=prior,
    )


async def play_govsim(
    sim: Simulation,
    on_month: Callable[[GovSimMonth], None] | None = None,
    shown: Shown | None = None,
) -> GovSimResult:
    """Play ``sim``'s GovSim episode to its end, from where its save stands; ``sim`` is
    closed afterwards.

    Each month: harvest decisions (one question per agent to the run's mind, the offline
    rule or the agent's model at temperature 0.8, whatever the run's; out-of-range answers
    are clamped to 0..stock and counted, never fatal), rationing if the lake is
    oversubscribed, the disclosure injected as the round's event (the requests and clamps
    too when they differ from the catches), one discussion round (``sim.advance()``), then
    regeneration. Stops after the run's months or at collapse (stock < 5). The harvest
    calls are tracked (engine/llm/progress.py) as a pass before the month's round, and
    recorded with it. A saved run writes its months to its study file before each round:
    resumed, a month whose round was lost plays its discussion again with the same catches.
    ``on_month`` is told each saved month; ``shown(sim)`` wraps the play (the CLI's
    progress)."""
    n_agents = len(sim.scenario.names)
    played = _saved_months(sim)
    stopped = None
    try:
        with shown(sim) if shown is not None else contextlib.nullcontext():
            while True:
                if len(played) == sim.round:  # the next month's harvest
                    if len(played) >= sim.total_rounds or (played and played[-1].collapsed):
                        break
                    stopped = sim.mind.stop_reason()
                    if stopped:
                        break
                    played.append(await _month(sim, len(played) + 1, played))
                    if sim.store is not None:
                        write_study(sim.store, sim.run_id, GovSimLog(months=played))
                month = played[-1]
                text = _disclosure(month)
                if not any(e.text == text for e in sim.pending.events):
                    sim.inject(text)
                try:
                    await sim.advance()
                except BudgetError as err:  # the harvest calls reached a cap: the month stands
                    stopped = str(err)
                    break
                if on_month is not None:
                    on_month(month)
    finally:
        await sim.aclose()
    return GovSimResult(
        months=played,
        metrics=metrics(played, n_agents, horizon=sim.total_rounds),
        run_id=sim.run_id if sim.store is not None else None,
        out_of_range=sum(len(m.clamps()) for m in played),
        stopped=stopped,
    )


async def _month(sim: Simulation, month: int, played: Sequence[GovSimMonth]) -> GovSimMonth:
    """Month ``month``'s harvest: asked, clamped, rationed; the stock regenerated."""
    stock = played[-1].stock_after if played else float(CAPACITY)
    with sim.progress.round(month, len(sim.scenario.names)):  # the harvest calls, shown
        sim.progress.phase("harvest")
        answered = await _harvests(sim, month, stock, played)
    requested = {n: float(min(max(tons, 0), int(stock))) for n, tons in answered.items()}
    taken = ration(requested, stock)
    after = next_stock(stock, list(taken.values()))
    return GovSimMonth(
        month=month,
        stock_before=stock,
        harvests=taken,
        stock_after=after,
        collapsed=after < COLLAPSE,
        requested=requested,
        answered=answered,
    )


def _saved_months(sim: Simulation) -> list[GovSimMonth]:
    """The months a saved run has played (its last one maybe without its round yet)."""
    if sim.store is None:
        return []
    log = read_study(sim.store, sim.run_id, GovSimLog)
    months = log.months if log is not None else []
    if len(months) not in (sim.round, sim.round + 1):
        raise SaveError(
            f"run {sim.run_id!r}: its study file has {len(months)} months for "
            f"{sim.round} saved rounds; it is not a GovSim episode this socialsim can go on with"
        )
    return months


def _stated(prior: Prior | None, me: str) -> dict[str, int]:
    """The signs the prior states for ``me``'s pairs: peer -> sign."""
    return {j if i == me else i: s for i, j, s in (prior.edges if prior else []) if me in (i, j)}


def _others_last(played: Sequence[GovSimMonth], me: str) -> float | None:
    """The others' mean catch last month, as a multiple of that month's sustainable share."""
    if not played:
        return None
    last = played[-1]
    share = sustainable_share(last.stock_before, len(last.harvests))
    others = [r for n, r in last.harvests.items() if n != me]
    if not others or share <= 0:
        return None
    return sum(others) / len(others) / share
