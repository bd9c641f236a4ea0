"""A model's behaviour measured from the saved runs it played, of any scenario, for the cost
estimate (:mod:`engine.studies.estimate`): how often its agents speak and how (privately, to one
agent or to all), how long its utterances, intents and memory summaries are, and, per purpose
of call, how many exchanges a question takes (re-asks, the batched judge's re-ask of missing
edges) and how many tokens they send and get back.

What a model does is a property of the model, not of the scenario: these figures, measured
where the model played, apply to another scenario's rendered prompts. Exchanges are kept by
(purpose, model), so a judge model's figures come from the runs where it judged, in the judge
mode the purpose belongs to (``relation``, ``emotion``, ``needs``: per-edge; ``judge``:
batched).
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.exchanges import AGAIN, REASK, LLMCall
from ..core.scenario import Scenario
from ..core.state import ALL, Action, Mode
from ..errors import SaveError
from ..llm.bounds import loads
from ..llm.settings import LLMSettings

#: At most this many saved runs (the newest) are read, and of each its first rounds.
MAX_RUNS, MAX_ROUNDS = 10, 50
#: At most this many texts of one kind are token-counted; the rest count at their mean.
SAMPLE = 200


@dataclass(frozen=True)
class Exchanges:
    """One purpose's exchanges with one model: the questions asked (first asks), every
    exchange (re-asks too), their prompt tokens (of the first asks, of all) and completion
    tokens."""

    asks: int = 0
    calls: int = 0
    first_prompt: int = 0
    prompt: int = 0
    completion: int = 0

    @property
    def calls_per_ask(self) -> float:
        return self.calls / self.asks if self.asks else 1.0

    @property
    def prompt_factor(self) -> float:
        """All prompt tokens over the first asks' (re-asks resend the prompt)."""
        return self.prompt / self.first_prompt if self.first_prompt else 1.0

    @property
    def completion_per_ask(self) -> float:
        return self.completion / self.asks if self.asks else 0.0


@dataclass(frozen=True)
class Voice:
    """How one model's agents of one kind act: the share of decisions that speak, of the
    spoken ones the share said privately, of the public ones the share addressed to one
    agent; the mean tokens of an intent. Kept apart for agents that decide (``decide``)
    and value-driven agents (``plan``: the model proposes, a rule of the agent's values
    picks)."""

    decisions: int
    speak: float
    private: float
    addressed: float
    intent_tokens: float


@dataclass(frozen=True)
class Summaries:
    """One judge model's relation summaries (remembered, shown in later prompts): the share
    of judgements that give one, and their mean tokens."""

    share: float
    tokens: float


@dataclass(frozen=True)
class Behaviour:
    """What the saved runs of some models measured (see the module docstring)."""

    runs: int = 0
    rounds: int = 0
    exchanges: dict[tuple[str, str], Exchanges] = field(default_factory=dict)
    #: By (kind, model): ``decide`` or ``plan``.
    voices: dict[tuple[str, str], Voice] = field(default_factory=dict)
    summaries: dict[str, Summaries] = field(default_factory=dict)

    def exchange(self, purpose: str, model: str) -> Exchanges | None:
        """The purpose's measured exchanges with ``model`` (None: never measured)."""
        found = self.exchanges.get((purpose, model))
        return found if found is not None and found.asks else None

    def voice(self, kind: str, model: str) -> Voice | None:
        """How ``model``'s agents of ``kind`` act; those of the other kind when only they
        were measured (None: neither was)."""
        other = "decide" if kind == "plan" else "plan"
        return self.voices.get((kind, model)) or self.voices.get((other, model))

    def utterance_tokens(self, model: str) -> float | None:
        """Mean tokens of ``model``'s utterances (None: it never spoke)."""
        speak = self.exchange("speak", model)
        return speak.completion_per_ask if speak is not None else None


def measure(saves: Path | str | None, settings: LLMSettings) -> Behaviour:
    """The behaviour of the models of ``settings`` in the newest saved runs (at most
    :data:`MAX_RUNS`) where any of them played; unreadable runs are skipped."""
    if saves is None:
        return Behaviour()
    from ..saves.store import SaveStore

    store = SaveStore(saves)
    models = {settings.model, settings.judge, *settings.agent_models.values()}
    rows = [r for r in store.list_runs() if r.ok and r.rounds_done]
    rows.sort(key=lambda r: r.created, reverse=True)
    tally = _Tally(models)
    for row in rows:
        if tally.runs >= MAX_RUNS:
            break
        try:
            meta = store.read_meta(row.run_id)
            if meta.llm is None or not models & {
                meta.llm.model,
                meta.llm.judge,
                *meta.llm.agent_models.values(),
            }:
                continue
            history = store.history(row.run_id, meta)
            logs = list(history.logs(1, min(len(history), 1 + MAX_ROUNDS)))
        except SaveError:
            continue
        tally.add(meta.llm, meta.scenario, logs)
    return tally.behaviour()


class _Tally:
    """Sums what the runs show, model by model."""

    def __init__(self, models: set[str]) -> None:
        self.models = models
        self.runs = self.rounds = 0
        self.exchanges: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * 5)
        self.acts: dict[tuple[str, str], list[Action]] = defaultdict(list)
        self.summaries: dict[str, list[str]] = defaultdict(list)

    def add(self, llm: LLMSettings, scenario: Scenario, logs: Iterable[Any]) -> None:
        kinds = {a.name: "plan" if a.kind == "value-driven" else "decide" for a in scenario.agents}
        played = False
        for log in logs:
            if not log.llm_calls:
                continue
            played = True
            self.rounds += 1
            for call in log.llm_calls:
                if call.model in self.models:
                    self._call(call)
            for act in log.actions:
                model = llm.model_for(act.speaker)
                if model in self.models and act.actor == "model" and not act.forced:
                    self.acts[kinds.get(act.speaker, "decide"), model].append(act)
        self.runs += played

    def _call(self, call: LLMCall) -> None:
        tally = self.exchanges[call.purpose, call.model]
        asked_again = (REASK, AGAIN, ":missing")  # invalid, degenerate, edges left out
        first = not call.key.endswith(asked_again) and ":rejected" not in call.key
        tally[0] += first
        tally[1] += 1
        tally[2] += call.prompt_tokens if first else 0
        tally[3] += call.prompt_tokens
        tally[4] += call.completion_tokens
        if call.response and call.outcome in ("ok", "repaired"):
            found = _summaries(call.response)
            if found:
                self.summaries[call.model] += found

    def behaviour(self) -> Behaviour:
        counter = _TokenCounter()
        voices = {}
        for (kind, model), acts in self.acts.items():
            said = [a for a in acts if a.mode is not Mode.SILENT]
            public = [a for a in said if a.mode is Mode.PUBLIC]
            voices[kind, model] = Voice(
                decisions=len(acts),
                speak=len(said) / len(acts),
                private=(len(said) - len(public)) / len(said) if said else 0.0,
                addressed=(
                    sum(a.target not in (None, ALL) for a in public) / len(public)
                    if public
                    else 0.0
                ),
                intent_tokens=counter.mean(model, [a.intent for a in said]),
            )
        summaries = {}
        for model, texts in self.summaries.items():
            given = [t for t in texts if t]
            summaries[model] = Summaries(len(given) / len(texts), counter.mean(model, given))
        return Behaviour(
            runs=self.runs,
            rounds=self.rounds,
            exchanges={key: Exchanges(*t) for key, t in self.exchanges.items()},
            voices=voices,
            summaries=summaries,
        )


def _summaries(response: str) -> list[str]:
    """The relation summaries of a judge's reply (one per judgement); none for other
    replies."""
    try:
        data = loads(response)  # a saved reply nested thousands deep: not read
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    items = data.get("judgements") if "judgements" in data else [data]
    if not isinstance(items, list):
        return []
    return [
        str(item.get("summary") or "")
        for item in items
        if isinstance(item, dict) and "delta_fav" in item
    ]


class _TokenCounter:
    """Mean tokens of texts as a model counts them (a sample of at most :data:`SAMPLE`)."""

    def __init__(self) -> None:
        from ..llm.transport import _litellm

        self.litellm = _litellm()
        self.rng = random.Random(0)

    def mean(self, model: str, texts: list[str]) -> float:
        if not texts:
            return 0.0
        sample = texts if len(texts) <= SAMPLE else self.rng.sample(texts, SAMPLE)
        return statistics.fmean(self.count(model, t) for t in sample)

    def count(self, model: str, text: str) -> int:
        return int(self.litellm.token_counter(model=model, text=text)) if text else 0
