"""A run card: what a paper's methods section needs to report a run, as one JSON document.

The scenario's content hash, the prompt templates' hashes, the models, structured-output
mode, temperature and decoding, seed, judge mode, history window, memory size, the versions
of socialsim, litellm and Python, the interventions and forks with their rounds, the totals
of calls, tokens, cost, repairs, re-asks and fallbacks, how well each model played per
purpose (degenerate, clamped, at-cap and fallen-back replies, with a loud line when a share
passes its threshold), and a plain warning when the output is not deterministic. Secrets
never appear: an API key lives only in the environment (the settings hold at most the name
of its variable), and an ``api_base`` is given without any user, password or query it
holds.

The card is built from the run's metadata and its rounds' logs as they stream by
(:class:`CardBuilder`), so an export adds it without a second pass.
"""

from __future__ import annotations

import ast
import hashlib
import json
import platform
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from ..core.exchanges import RoundUsage
from ..core.rules import HISTORY_WINDOW
from ..core.state import ALL, Action, ForcedAction, Mode, RoundLog, ScenarioEvent
from ..core.tally import PurposeQuality, Tally, loud_lines
from ..saves.runmeta import RunMeta

#: The version of the exported tables' columns (``csv_schema`` in the card): 2 renamed
#: ``round`` and ``mode`` (they shadow pandas methods) to ``round_no`` and ``speech_mode``
#: and added ``agents.csv`` and the metrics' ``unit``.
CSV_SCHEMA = 2

FILE = "card.json"
#: The agents' and judge's prompt builders.
PROMPTS = Path(__file__).parents[1] / "minds" / "prompts.py"
#: The prompt builders whose templates the card hashes (``engine.minds.prompts``).
TEMPLATES = (
    "decide",
    "plan",
    "speak",
    "emotion",
    "relation",
    "observer",
    "missing_edges",
    "needs",
)


class Intervention(BaseModel):
    """One intervention and the round it acted in."""

    model_config = ConfigDict(extra="forbid")
    round: int
    #: "named" (a ready-made intervention, at the fork), "forced" (a turn), "injected" (an
    #: event), "scheduled" (a named one's event still to come), "queued" (for the next round)
    kind: str
    agent: str = ""
    text: str = ""
    #: A turn's mode (public, private, silent); an event's: public or private.
    mode: str = ""
    #: Whom a turn is addressed to ("all" for everyone); whom an event is about (";"-joined).
    target: str = ""
    #: Who observes it: ["all"], or the agents a private turn or event reaches.
    audience: list[str] = ["all"]

    @classmethod
    def of_turn(cls, round_no: int, kind: str, turn: Action | ForcedAction) -> Intervention:
        """A forced turn (played, or queued): its agent, mode, target and audience."""
        speaker = turn.speaker if isinstance(turn, Action) else turn.agent
        target = turn.target or ALL
        audience = {
            Mode.PUBLIC: [ALL],
            Mode.PRIVATE: [speaker, target],
            Mode.SILENT: [speaker],
        }[turn.mode]
        return cls(
            round=round_no,
            kind=kind,
            agent=speaker,
            text=turn.utterance,
            mode=turn.mode.value,
            target=target if turn.mode is not Mode.SILENT else "",
            audience=audience,
        )

    @classmethod
    def of_event(cls, round_no: int, kind: str, event: ScenarioEvent) -> Intervention:
        """An injected, queued or scheduled event: public or private, whom it is about and
        who observes it."""
        private = event.private_to is not None
        return cls(
            round=round_no,
            kind=kind,
            text=event.text,
            mode="private" if private else "public",
            target=";".join(event.about),
            audience=list(event.private_to or []) if private else [ALL],
        )


class Totals(BaseModel):
    """The run's LLM usage summed over its rounds."""

    model_config = ConfigDict(extra="forbid")
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    repairs: int = 0
    reasks: int = 0
    fallbacks: int = 0
    errors: int = 0
    missing_edges: int = 0
    #: Replies whose out-of-bound values were clamped to the schema's bounds.
    clamped: int = 0
    #: Replies that fit their schema but said nothing worth counting; replies whose every
    #: signed change sat at its cap; edges a batched judge's first reply left out.
    degenerate: int = 0
    at_cap: int = 0
    left_out: int = 0
    #: The prefix cache as servers reported it, and the prompts' own shared prefix
    #: (``RoundUsage``'s fields of the same names).
    cached_tokens: int = 0
    cache_reported: int = 0
    shared_prefix: int = 0


class RunCard(BaseModel):
    """What a methods section needs to report a run."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    name: str
    created: str
    rounds: int
    total_rounds: int
    scenario_id: str
    scenario_title: str
    scenario_ref: str
    scenario_sha256: str
    prompt_templates_sha256: dict[str, str]
    mind: str  # "offline" or "llm"
    model: str
    judge_model: str
    agent_models: dict[str, str]
    api_base: str | None
    structured: str
    structured_models: dict[str, str]
    structured_modes: dict[str, str]
    temperature: float | None
    max_tokens: int | None
    timeout_s: float | None
    retries: int | None
    seed: int
    judge_mode: str
    history_window: int
    memory_size: int
    ablation: bool
    prior: str | None
    versions: dict[str, str]
    forks: list[dict[str, Any]]
    interventions: list[Intervention]
    #: The version of the exported tables' columns (``engine.reports.export.CSV_SCHEMA``).
    csv_schema: int = 1
    totals: Totals
    #: How well each model played, per purpose (``engine.core.quality``), and a loud line
    #: per model whose shares passed their thresholds.
    quality: list[PurposeQuality] = []
    quality_warnings: list[str] = []
    deterministic: bool
    warning: str | None

    def to_json(self) -> str:
        """The card as indented JSON."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


class CardBuilder:
    """Collects a run's card from its metadata and its rounds' logs, one round at a time."""

    def __init__(self, meta: RunMeta) -> None:
        self.meta = meta
        self.rounds = 0
        self.usage = RoundUsage()
        self.tally = Tally()
        self.interventions: list[Intervention] = []

    def add(self, log: RoundLog) -> None:
        """Take one round's forced actions, injected events and usage."""
        self.rounds = max(self.rounds, log.round)
        for a in log.actions:
            if a.forced:
                self.interventions.append(Intervention.of_turn(log.round, "forced", a))
        for e in log.events:
            if e.source == "injected":
                self.interventions.append(Intervention.of_event(log.round, "injected", e))
        if log.usage is not None:
            self.usage = RoundUsage.summed([self.usage, log.usage])
        self.tally.add(log.llm_calls)

    def card(self) -> RunCard:
        """The card of the rounds added so far."""
        meta, llm = self.meta, self.meta.llm
        pending = [
            *(Intervention.of_turn(meta.pending_round, "queued", f) for f in meta.pending.forced),
            *(Intervention.of_event(meta.pending_round, "queued", e) for e in meta.pending.events),
        ]
        scheduled = [
            Intervention.of_event(s.round, "scheduled", s.event)
            for s in meta.scheduled
            if s.round > self.rounds  # played ones are among the injected events
        ]
        named = []
        if meta.intervention and meta.parent is not None:
            named = [Intervention(round=meta.parent.round, kind="named", text=meta.intervention)]
        deterministic = llm is None
        return RunCard(
            run_id=meta.run_id,
            name=meta.name,
            created=meta.created,
            rounds=self.rounds,
            total_rounds=meta.total_rounds,
            scenario_id=meta.scenario.id,
            scenario_title=meta.scenario.title,
            scenario_ref=meta.scenario_ref,
            scenario_sha256=scenario_hash(meta),
            prompt_templates_sha256=template_hashes(),
            mind="offline" if llm is None else "llm",
            model=meta.model,
            judge_model=llm.judge if llm else meta.model,
            agent_models=dict(llm.agent_models) if llm else {},
            api_base=_public_url(llm.api_base) if llm and llm.api_base else None,
            structured=llm.structured if llm else "",
            structured_models=dict(llm.structured_models) if llm else {},
            structured_modes=dict(meta.structured_modes),
            temperature=llm.temperature if llm else None,
            max_tokens=llm.max_tokens if llm else None,
            timeout_s=llm.timeout if llm else None,
            retries=llm.retries if llm else None,
            seed=meta.seed,
            judge_mode=llm.judge_mode if llm else "rules",
            history_window=HISTORY_WINDOW,
            memory_size=meta.scenario.memory_size,
            ablation=meta.ablation,
            prior=_prior(meta),
            versions=versions(),
            forks=[{"run_id": f.run_id, "round": f.round} for f in meta.ancestry],
            interventions=sorted(
                [*named, *self.interventions, *scheduled, *pending], key=lambda i: i.round
            ),
            csv_schema=CSV_SCHEMA,
            totals=Totals(**self.usage.model_dump(include=set(Totals.model_fields))),
            quality=self.tally.rows(),
            quality_warnings=loud_lines(self.tally.rows()),
            deterministic=deterministic,
            warning=None if deterministic else _warning(meta),
        )


def run_card(meta: RunMeta, logs: Iterable[RoundLog]) -> RunCard:
    """The card of a run from its metadata and its rounds' logs (``History.logs()``)."""
    builder = CardBuilder(meta)
    for log in logs:
        builder.add(log)
    return builder.card()


def scenario_hash(meta: RunMeta) -> str:
    """SHA-256 of the run's scenario as canonical JSON (sorted keys, no spaces)."""
    data = meta.scenario.model_dump(mode="json")
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def template_hashes() -> dict[str, str]:
    """SHA-256 of each prompt builder's source, and of the whole prompts module (its helpers
    and constants), as this socialsim holds them (the file is read, not imported)."""
    text = PROMPTS.read_text(encoding="utf-8")
    lines = text.splitlines()
    builders = {  # top-level functions: whole lines, from ``def`` to the end of the body
        node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.parse(text).body
        if isinstance(node, ast.FunctionDef)
    }
    hashes = {name: _sha(builders[name]) for name in TEMPLATES}
    hashes["module"] = _sha(text)
    return hashes


def versions() -> dict[str, str]:
    """socialsim, litellm and Python versions (litellm's from its metadata, not imported)."""
    found = {"python": platform.python_version()}
    for package in ("socialsim", "litellm"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prior(meta: RunMeta) -> str | None:
    p = meta.prior
    if p is None:
        return None
    edges = ",".join(f"{i}-{j}:{s:+d}" for i, j, s in p.edges)
    parts: list[str] = [p.control, p.relation or "", p.topology]
    if p.positivity is not None:
        parts.append(f"positivity={p.positivity:g}")
    return " ".join(x for x in parts if x) + (f" [{edges}]" if edges else "")


def _public_url(url: str) -> str:
    """``url`` without a user, password, query or fragment (they may hold a key)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _warning(meta: RunMeta) -> str:
    llm = meta.llm
    assert llm is not None
    models = sorted({llm.model, llm.judge, *llm.agent_models.values()})
    return (
        f"not deterministic: {', '.join(models)} sampled at temperature {llm.temperature:g} "
        "and no provider guarantees identical output for identical requests (no seed is "
        f"sent); rerunning gives another run; `socialsim replay {meta.run_id}` reproduces "
        "this one from its recorded exchanges"
    )
