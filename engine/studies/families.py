"""The study families of the Relational priors paper (Sec. 4), one object each: GovSim's
fishing commons and the multi-agent debate. A family says its name, its options (team sizes,
topologies, questions), how an episode plays and prints, what a sweep's cell plays and which
statistics its contrasts take. The CLI and the sweep look a family up in :data:`FAMILIES`;
a new family is one more object there."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SocialsimError

if TYPE_CHECKING:
    from ..core.priors import Prior
    from ..minds.spec import MindSpec
    from ..round.simulation import Simulation
    from ..saves.store import SaveStore
    from .govsim import GovSimMonth
    from .studyfile import Shown

#: A played cell: its metrics, and its bootstrap units (unit name -> counts of the parts of
#: the contrasted statistics).
Played = tuple[dict[str, float | None], dict[str, dict[str, float]]]


@dataclass(frozen=True)
class Episode:
    """One episode as the CLI prints it: lines of plain text, the debate's question-level
    intervals (None for GovSim) and the episode's metrics."""

    lines: list[str]
    intervals: Any
    metrics: Mapping[str, float | None]


@dataclass(frozen=True)
class Family:
    """What every study family states; the plays are its subclass's."""

    name: str
    title: str
    #: Team sizes ``--agents`` accepts, and the topologies ``--topologies`` accepts.
    team_sizes: tuple[int, ...]
    topologies: tuple[str, ...]
    #: Whether resampling units are paired across conditions (the same questions).
    paired: bool
    #: The metrics the sweep table shows, with their short headers (all are in the CSV).
    metrics: Mapping[str, str]
    #: How the contrasts' intervals are computed, as the contrasts table's title says it.
    intervals: str
    #: Why ``topologies`` is all it accepts, when it is one (said on a refused one).
    topology_note: str = ""

    def agent_names(self, agents: int | None = None) -> list[str]:
        """The fixed names of a team of ``agents`` (the family's first size by default)."""
        raise NotImplementedError

    def questions(self, path: Path | None) -> list[Any]:
        """What every cell is asked (the debate's questions; nothing for GovSim)."""
        return []

    def sweep_mind(self, spec: MindSpec) -> MindSpec:
        """The mind a sweep's cells share, as the paper plays the family."""
        return spec

    def contrast_ratios(self) -> dict[str, tuple[str, str]]:
        """The statistics contrasts are computed on, as (numerator, denominator) parts."""
        raise NotImplementedError

    async def play(
        self,
        prior: Prior,
        agents: int,
        seed: int,
        mind: MindSpec,
        questions: Sequence[Any],
        run: int,
    ) -> Played:
        """One sweep cell: repetition ``run``, played with ``seed``."""
        raise NotImplementedError

    def new_run(
        self,
        prior: Prior,
        agents: int,
        seed: int,
        mind: MindSpec,
        store: SaveStore | None,
        run_id: str | None = None,
        name: str = "",
    ) -> Simulation:
        """A single episode (``socialsim run govsim``) as a new run, not yet played."""
        raise NotImplementedError

    def resumed(self, run_id: str, store: SaveStore, mind: MindSpec | None = None) -> Simulation:
        """A saved episode's run, reopened to go on (``mind``: the run's, or new caps)."""
        from ..round.study import StudyRun

        return StudyRun.resume(run_id, store, mind=mind)

    async def play_on(
        self, sim: Simulation, say: Callable[[str], None], shown: Shown | None = None
    ) -> Episode:
        """Play a single episode's run to its end from where its save stands (``resume``
        too): each finished turn said as a line (``say``); ``sim`` is closed afterwards."""
        raise NotImplementedError


class GovSimFamily(Family):
    """GovSim (App. A): run-level units, each endpoint resampled on its own, ΔS."""

    def agent_names(self, agents: int | None = None) -> list[str]:
        from .govsim import NAMES

        return list(NAMES[: agents or self.team_sizes[0]])

    def sweep_mind(self, spec: MindSpec) -> MindSpec:
        from .govsim import paper_settings

        return paper_settings(spec)

    def contrast_ratios(self) -> dict[str, tuple[str, str]]:
        return {"score": ("score", "runs")}

    async def play(
        self,
        prior: Prior,
        agents: int,
        seed: int,
        mind: MindSpec,
        questions: Sequence[Any],
        run: int,
    ) -> Played:
        from .govsim import run_govsim

        result = await run_govsim(prior, n_agents=agents, seed=seed, mind=mind)
        metrics: dict[str, float | None] = dict(result.metrics)
        return metrics, {f"run{run}": {"score": result.metrics["score"], "runs": 1.0}}

    def new_run(
        self,
        prior: Prior,
        agents: int,
        seed: int,
        mind: MindSpec,
        store: SaveStore | None,
        run_id: str | None = None,
        name: str = "",
    ) -> Simulation:
        from .govsim import govsim_run, paper_settings

        return govsim_run(
            prior, agents, seed, paper_settings(mind), store=store, run_id=run_id, name=name
        )

    async def play_on(
        self, sim: Simulation, say: Callable[[str], None], shown: Shown | None = None
    ) -> Episode:
        from .govsim import play_govsim

        lines: list[str] = []

        def month(m: GovSimMonth) -> None:
            lines.append(m.line())
            say(lines[-1])

        result = await play_govsim(sim, month, shown)
        if result.stopped:
            lines.append(f"stopped: {result.stopped}")
            say(lines[-1])
        return Episode(lines, None, result.metrics)


class DebateFamily(Family):
    """Debate (App. B): question-level units, paired across conditions, ACC, CR, CCR, WCF."""

    def agent_names(self, agents: int | None = None) -> list[str]:
        return [f"Agent{i}" for i in range(1, (agents or self.team_sizes[0]) + 1)]

    def questions(self, path: Path | None) -> list[Any]:
        from .debate import load_questions, sample_questions

        return load_questions(path) if path else sample_questions()

    def contrast_ratios(self) -> dict[str, tuple[str, str]]:
        from .debate.scoring import RATIOS

        return {m: RATIOS[m] for m in DEBATE_METRICS}

    async def play(
        self,
        prior: Prior,
        agents: int,
        seed: int,
        mind: MindSpec,
        questions: Sequence[Any],
        run: int,
    ) -> Played:
        from .debate import run_debate
        from .debate.stats import question_units

        debate = await run_debate(prior, questions, k=agents, seed=seed, mind=mind)
        return dict(debate.metrics), question_units(debate.traces, questions)

    def new_run(
        self,
        prior: Prior,
        agents: int,
        seed: int,
        mind: MindSpec,
        store: SaveStore | None,
        run_id: str | None = None,
        name: str = "",
    ) -> Simulation:
        from .debate import sample_questions
        from .debate.saved import debate_run

        return debate_run(
            prior, sample_questions(), k=agents, seed=seed, mind=mind, store=store,
            run_id=run_id, name=name,
        )  # fmt: skip

    async def play_on(
        self, sim: Simulation, say: Callable[[str], None], shown: Shown | None = None
    ) -> Episode:
        from ..round.study import StudyRun
        from .debate import sample_questions
        from .debate.saved import Turn, play_debate
        from .debate.stats import bootstrap_metrics

        if not isinstance(sim, StudyRun):
            raise SocialsimError(f"run {sim.run_id!r}: a debate plays in a StudyRun")
        questions = sample_questions()
        lines: list[str] = []

        def turn(done: Turn) -> None:
            qid, t, answers = done
            chosen = ", ".join(f"{n} {a or '–'}" for n, a in answers.items())
            lines.append(f"{qid} round {t}: {chosen}")
            say(lines[-1])

        debated = await play_debate(sim, questions, turn, shown)
        intervals = bootstrap_metrics(debated.traces, questions, seed=sim.meta.seed)
        return Episode(lines, intervals, debated.metrics)


#: The debate metrics whose contrasts a sweep reports (App. B.3, B.4).
DEBATE_METRICS = ("acc", "cr", "ccr", "wcf")

GOVSIM = GovSimFamily(
    name="govsim",
    title="GovSim, the fishing commons",
    team_sizes=(3, 5),
    topologies=("complete", "chain", "star", "tree"),
    paired=False,
    metrics={
        "score": "S",
        "survival_time": "surv",
        "total_gain": "gain",
        "equality": "eq",
        "over_usage": "over h/2n",
        "over_usage_group": "over h/2",
    },
    intervals="95% bootstrap intervals, run-level, endpoints resampled independently",
)
DEBATE = DebateFamily(
    name="debate",
    title="multi-agent debate on the bundled questions",
    team_sizes=(3,),
    topologies=("complete",),
    paired=True,
    metrics={"cr": "CR", "acc": "ACC", "ccr": "CCR", "wcf": "WCF"},
    intervals="paired 95% bootstrap intervals, question-level",
    topology_note="debate uses complete connectivity (Relational priors Sec. 4)",
)
FAMILIES: dict[str, Family] = {f.name: f for f in (GOVSIM, DEBATE)}


def family(name: str) -> Family:
    """The family called ``name``; an unknown one is a one-line error naming the choices."""
    found = FAMILIES.get(name)
    if found is None:
        raise SocialsimError(f"{name!r}: choose {' or '.join(FAMILIES)}")
    return found
