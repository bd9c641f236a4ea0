"""``socialsim trial``: a randomised trial from a fork — every seed's prefix played once,
branched once per arm, each arm played to the end — with per-arm means, paired differences
from the control (95% bootstrap intervals) and a tidy CSV."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .base import (
    FormatOpt,
    SavesOpt,
    fail,
    make_console,
    open_store,
    out_file,
    outside_saves,
    say,
    sigterm_raises,
)
from .batch import (
    AddressOpt,
    ExecutorOpt,
    RateOpt,
    WorkersOpt,
    YesOpt,
    confirm_spend,
    make_executor,
    progress_bar,
)
from .options import LLMOptions, llm_options
from .output import Number, Plain

if TYPE_CHECKING:
    from rich.table import Table

    from engine import SaveStore
    from engine.studies.estimate import Estimate
    from engine.studies.experiments.stats import Estimate as Mean
    from engine.studies.experiments.trial import ArmSummary, TrialResult, TrialSpec


def parse_seeds(text: str) -> list[int]:
    """``1-20``, ``1,3,5`` or both (``1-5,9``); at most ``MAX_TRIAL_SEEDS`` seeds."""
    from engine.core.limits import MAX_TRIAL_SEEDS

    ranges: list[range] = []
    try:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            first, sep, last = part.partition("-")
            ranges.append(
                range(int(first), int(last) + 1) if sep else range(int(first), int(first) + 1)
            )
    except ValueError:
        fail(f"--seeds {text!r}: give seeds like 1-20 or 1,3,5")
    if sum(max(0, r.stop - r.start) for r in ranges) > MAX_TRIAL_SEEDS:
        fail(f"--seeds {text!r}: a trial has at most {MAX_TRIAL_SEEDS:,} seeds")
    seeds = [seed for r in ranges for seed in r]
    if not seeds:
        fail(f"--seeds {text!r}: give at least one seed")
    return seeds


def _scenario(ref: str) -> tuple[object, str]:
    """A scenario (library id or file) or a task (``task:<id>``, or a task id), and the
    reference its runs record."""
    from engine.studies.targets import open_target

    return open_target(ref)


def _new_spec(
    store: SaveStore,
    ref: str,
    fork_at: int | None,
    arms: str | None,
    inject: list[str],
    force: list[str],
    prior_arm: list[str],
    seeds: str,
    rounds: int | None,
    trial_id: str | None,
    resamples: int,
    llm: LLMOptions,
) -> TrialSpec:
    from engine.core.scenario import Scenario
    from engine.studies.experiments.arms import (
        NONE,
        forcing_arm,
        injection_arm,
        named_arms,
    )
    from engine.studies.experiments.arms import (
        prior_arm as make_prior_arm,
    )
    from engine.studies.experiments.trial import plan

    scenario, scenario_ref = _scenario(ref)
    assert isinstance(scenario, Scenario)
    total = rounds or scenario.rounds
    fork = total // 2 if fork_at is None else fork_at
    chosen = named_arms(
        arms if arms is not None else ",".join([NONE, *scenario.interventions]), scenario
    )
    chosen += [injection_arm(t, k, fork, total) for k, t in enumerate(inject, 1)]
    chosen += [forcing_arm(t, k, scenario, fork, total) for k, t in enumerate(force, 1)]
    chosen += [make_prior_arm(t, k, scenario.names) for k, t in enumerate(prior_arm, 1)]
    mind = llm.spec(
        scenario.names, scenario_models={a.name: a.model for a in scenario.agents if a.model}
    )
    return plan(
        store,
        scenario,
        scenario_ref,
        fork_at=fork,
        arms=chosen,
        seeds=parse_seeds(seeds),
        rounds=rounds,
        mind=mind,
        trial_id=trial_id,
        resamples=resamples,
    )


@llm_options(
    "model",
    "judge_model",
    "agent_model",
    "api_base",
    "endpoints",
    "api_key_env",
    "judge_mode",
    "structured",
    "max_concurrency",
    "timeout",
    "call_timeout",
    "retries",
    "tolerate_fallbacks",
)
def trial(
    scenario: Annotated[
        str,
        typer.Argument(
            help="Scenario id or .toml path, or a task id; with --resume, the trial id."
        ),
    ],
    fork_at: Annotated[
        int | None,
        typer.Option("--fork-at", min=0, help="Round the arms branch at [default: half the run]."),
    ] = None,
    arms: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated arms: none and the scenario's interventions; the first is "
            "the control [default: none and every intervention]."
        ),
    ] = None,
    inject: Annotated[
        list[str],
        typer.Option("--inject", help='One more arm: "TEXT"@ROUND injects an event (repeatable).'),
    ] = [],  # noqa: B006 - typer reads the default
    force: Annotated[
        list[str],
        typer.Option(
            "--force",
            help="One more arm: AGENT:MODE[:TARGET[:UTTERANCE]]@ROUND forces an action "
            "(repeatable).",
        ),
    ] = [],  # noqa: B006
    prior_arm: Annotated[
        list[str],
        typer.Option(
            "--prior-arm", help="One more arm: a relational prior from the fork on (repeatable)."
        ),
    ] = [],  # noqa: B006
    seeds: Annotated[
        str | None, typer.Option(help="Seeds, e.g. 1-20 or 1,3,5 [default: 1-20].")
    ] = None,
    rounds: Annotated[
        int | None, typer.Option(min=1, help="Rounds of every run [default: the scenario's].")
    ] = None,
    trial_id: Annotated[
        str | None, typer.Option("--trial-id", help="Name the trial [default: generated].")
    ] = None,
    outcome: Annotated[
        list[str],
        typer.Option(
            "--outcome",
            help="Show this outcome (METRIC or METRIC:AGENT, e.g. survey.rses:Alice; "
            "repeatable) [default: final metrics and survey scores].",
        ),
    ] = [],  # noqa: B006
    resamples: Annotated[
        int | None, typer.Option(min=100, help="Bootstrap resamples [default: 10,000].")
    ] = None,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
    address: AddressOpt = None,
    calls_per_second: RateOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(parser=out_file, metavar="<path>", help="Write the tidy CSV here."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Finish the trial SCENARIO names: only missing runs play."),
    ] = False,
    yes: YesOpt = False,
    saves: SavesOpt = None,
    fmt: FormatOpt = "table",
    *,
    llm: LLMOptions,
) -> None:
    """A randomised trial: each seed's prefix to --fork-at, branched once per arm and played to
    the end; per-arm means and paired differences from the first arm, with 95% intervals."""
    from engine.studies.experiments.executor import Interrupted, Terminated
    from engine.studies.experiments.trial import RESAMPLES, load_spec, run_trial

    store = open_store(saves)
    outside_saves(out, store)
    runner = make_executor(executor, workers, address, calls_per_second)
    if resume:
        given = (fork_at, arms, rounds, trial_id, inject, force, prior_arm, seeds is not None)
        if any(given) or llm.model != "offline":
            fail("--resume re-uses the trial's saved spec: give only the trial id and how to run")
        spec = load_spec(store, scenario)
        if resamples is not None:  # they only shape the report
            spec = spec.model_copy(update={"resamples": resamples})
    else:
        spec = _new_spec(
            store, scenario, fork_at, arms, inject, force, prior_arm, seeds or "1-20", rounds,
            trial_id, resamples or RESAMPLES, llm,
        )  # fmt: skip
    shown = _selector(outcome, spec)
    console = make_console(stderr=fmt != "table")  # what surrounds the table
    what = f"Trial {spec.trial_id} ({spec.runs} runs)"
    confirm_spend(
        spec.mind.offline, yes, what, None if spec.mind.offline else _estimate(spec, store)
    )
    console.print(
        f"[bold]{spec.trial_id}[/]: {spec.scenario.title}, {len(spec.seeds)} seeds × "
        f"{len(spec.arms)} arms, fork at round {spec.fork_at} of {spec.rounds}, "
        f"{spec.mind.model} (control: {spec.control.name})"
    )
    try:
        with (
            sigterm_raises(Terminated) as terminated,
            progress_bar(f"trial {spec.trial_id}", spec.runs, not spec.mind.offline) as bar,
        ):
            result = run_trial(
                spec, store, runner, begun=bar.total, progress=bar.advance, calls=bar.calls
            )
    except Interrupted as stopped:
        partial: TrialResult = stopped.partial
        _report(partial, shown, out, fmt)
        say(
            ("terminated; " if terminated.received else "")
            + f"{partial.played} of {stopped.total} runs finished and saved"
            + (f", the CSV ({out}) holds every finished arm" if out is not None else "")
            + f"; socialsim trial {spec.trial_id} --resume plays the rest"
        )
        raise typer.Exit(143 if terminated.received else 130) from None
    if result.reused:
        console.print(f"{result.reused} of {spec.runs} runs were finished already; "
                      f"{result.played} played now")  # fmt: skip
    _report(result, shown, out, fmt)


def _estimate(spec: TrialSpec, store: SaveStore) -> Estimate:
    """What the trial's LLM calls would cost: one run's estimate, times the rounds still to
    play (each missing prefix to the fork, each missing arm from it) over a run's rounds."""
    from engine.studies.estimate import estimate_run
    from engine.studies.experiments.trial import collect

    one = estimate_run(spec.scenario, spec.mind, spec.rounds, store.root)
    _, prefixes, arms = collect(store, spec)
    rounds = len(prefixes) * spec.fork_at + len(arms) * (spec.rounds - spec.fork_at)
    return one.times(rounds / spec.rounds)


def _selector(outcome: list[str], spec: TrialSpec) -> object:
    """Which final outcomes the table shows: ``--outcome`` as METRIC[:AGENT], else the
    defaults."""
    from engine.studies.experiments.outcomes import default_outcome, outcome_names

    known = outcome_names()
    wanted = []
    for item in outcome:
        metric, _, agent = item.partition(":")
        if metric not in known and not metric.startswith("survey."):
            fail(
                f"--outcome {item!r}: no outcome {metric!r}; outcomes: {', '.join(known)}, "
                "survey.<questionnaire>"
            )
        if agent and agent not in spec.scenario.names:
            fail(
                f"--outcome {item!r}: no agent {agent!r}; agents: {', '.join(spec.scenario.names)}"
            )
        wanted.append((metric, agent))

    def accept(metric: str, agent: str) -> bool:
        if wanted:
            return any(metric == m and (not a or agent == a) for m, a in wanted)
        return default_outcome(metric, agent)

    return accept


def _report(result: TrialResult, shown: object, out: Path | None, fmt: str) -> None:
    from engine.studies.experiments.trial import final_values, summarize

    from .output import emit

    summaries = summarize(result, shown)  # type: ignore[arg-type]
    if summaries:
        emit(make_console(), [trial_table(result, summaries)], fmt)
    elif result.complete_seeds:
        names = sorted({metric for metric, _ in final_values(result)})
        fail(
            f"--outcome: the trial's runs have none of these; outcomes: {', '.join(names)} "
            f"(the runs are saved: socialsim trial {result.spec.trial_id} --resume shows them)"
        )
    if out is not None:
        try:
            write_trial_csv(result, out)
        except OSError as err:
            fail(
                f"--out {out}: cannot write the CSV ({err.strerror or err}); the runs are saved: "
                f"socialsim trial {result.spec.trial_id} --resume --out <path> writes it"
            )
        typer.echo(str(out), err=fmt != "table")


def write_trial_csv(result: TrialResult, out: Path) -> None:
    """The trial's tidy rows as one CSV file, written atomically."""
    import csv
    import io

    from engine.core.textsafe import csv_cell
    from engine.saves.atomic import atomic_write_text
    from engine.studies.experiments.outcomes import COLUMNS

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["trial", "scenario", *COLUMNS], lineterminator="\n")
    writer.writeheader()
    spec = result.spec
    for row in result.tidy():
        full = {"trial": spec.trial_id, "scenario": spec.scenario_ref, **row}
        writer.writerow({k: "" if v is None else csv_cell(v) for k, v in full.items()})
    atomic_write_text(out, buffer.getvalue())


def _mean(e: Mean | None, name: str, signed: bool = False) -> Number:
    """``2.35 [1.90, 2.80]``; for a machine, ``name``, ``name_low`` and ``name_high``."""
    from engine.studies.experiments.stats import estimate_text

    values: tuple[Plain, ...] = (None, None, None) if e is None else (e.mean, e.low, e.high)
    parts: dict[str, Plain] = dict(zip((name, f"{name}_low", f"{name}_high"), values, strict=True))
    return Number(estimate_text(e, signed), parts)


def trial_table(result: TrialResult, summaries: list[ArmSummary]) -> Table:
    """Per outcome and arm: the mean over the complete seeds and the paired difference from
    the control, each with its 95% bootstrap interval."""
    from rich.table import Table

    spec = result.spec
    seeds = len(result.complete_seeds)
    table = Table(
        title=f"final outcomes over {seeds} seeds (of {len(spec.seeds)}); 95% percentile "
        f"bootstrap intervals, seed-level, {spec.resamples:,} resamples; Δ paired with "
        f"{spec.control.name}",
        title_justify="left",
    )
    for name in ("outcome", "arm", "mean [95% CI]", f"Δ vs {spec.control.name} [95% CI]"):
        table.add_column(name, justify="right" if "[" in name else "left")
    last = None
    for s in summaries:
        key = f"{s.metric}:{s.agent}" if s.agent else s.metric
        if last is not None and key != last:
            table.add_section()
        table.add_row(key, s.arm, _mean(s.estimate, "mean"), _mean(s.difference, "diff", True))
        last = key
    return table
