"""Every rich table the CLI prints: rounds, runs, the scenario and task libraries, sweeps,
recasting iterations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..report import metrics_line
from ..widgets.style import STATUS_GLYPH, fav_style
from .output import Number, Plain
from .transcript import Transcript, Turn

if TYPE_CHECKING:
    from engine import Metrics, RoundRecord, RunListing, RunMeta, Scenario, WorldState
    from engine.core.state import RelationChange, RoundLog
    from engine.minds.spec import MindSpec
    from engine.saves.history import History
    from engine.studies.bootstrap import Interval
    from engine.studies.sweep import SweepResult
    from engine.studies.tasks.controller import Iteration
    from engine.studies.tasks.spec import Task

    from ..listing import TrialRuns
    from .output import Rows

MODE_STYLE = {"public": "bold", "private": "magenta", "silent": "dim"}


def mind_name(spec: MindSpec) -> str:
    """A run's mind in a few words: the offline model's label, or the model string."""
    return spec.label if spec.offline else spec.model


#: The status changes a round's summary names.
FLIPS_SHOWN = 6


def round_summary(
    log: RoundLog, flips: Sequence[RelationChange], total: int, metrics: Metrics
) -> RenderableType:
    """What happened in one round: events, utterances in order, the first status changes
    (``flips``: :data:`FLIPS_SHOWN` of them at most are named), metrics."""
    parts: list[RenderableType] = [Text(f"Round {log.round}/{total}", style="bold cyan")]
    for e in log.events:
        who = f" (private to {', '.join(e.private_to)})" if e.private_to else ""
        tag = "injected" if e.source == "injected" else "event"
        parts.append(Text.assemble((f"  [{tag}{who}] ", "yellow"), e.text))
    spoken = sorted((a for a in log.actions if a.order is not None), key=lambda a: a.order or 0)
    turns = []
    for a in spoken:
        arrow = f"→{a.target}" if a.target and a.target != "all" else ""
        mode = "" if a.mode.value == "public" else f" [{a.mode.value}]"
        forced = " (forced)" if a.forced else f" (human: {a.player})" * (a.actor == "human")
        who = f"{a.speaker}{arrow}{mode}{forced}"
        turns.append(Turn(str(a.order), who, MODE_STYLE[a.mode.value], a.utterance))
    silent = [a.speaker for a in log.actions if a.order is None]
    parts.append(Transcript(turns))
    if silent:
        parts.append(Text(f"  silent: {', '.join(silent)}", style="dim"))
    for c in flips[:FLIPS_SHOWN]:
        parts.append(
            Text(
                f"  {c.source}→{c.target}: {c.previous_status.value} → {c.status.value}"
                f" (fav {c.fav:+.2f}){' — ' + c.summary if c.summary else ''}",
                style="italic",
            )
        )
    parts.append(Text.assemble("  ", metrics_line(metrics)))
    return Group(*parts)


def fav_matrix(state: WorldState, plain: bool = False) -> Table:
    """The directed favorability matrix: row = from, column = to, glyph = status (names
    in the header to 8 characters, whole when ``plain``: for --format)."""
    names = list(state.agents)
    table = Table(title="favorability (row → column)", box=None, pad_edge=False)
    table.add_column("from \\ to", style="bold")
    for n in names:
        table.add_column(Text(n if plain else n[:8]), justify="right")
    for i in names:
        cells: list[Text | str] = [Text(i)]
        for j in names:
            if i == j:
                cells.append(Text("—", style="dim"))
                continue
            rel = state.agents[i].relations[j]
            cells.append(Text(f"{rel.fav:+.2f}{STATUS_GLYPH[rel.status]}", fav_style(rel.fav)))
        table.add_row(*cells)
    return table


def run_overview(
    meta: RunMeta, record: RoundRecord, metrics: Metrics, matrix: RenderableType
) -> RenderableType:
    """``show``: identity, lineage, pending interventions, agents, the favorability
    ``matrix`` (:mod:`.matrices`), metrics, at the round of ``record``."""
    state = record.state
    info = Table.grid(padding=(0, 2))
    info.add_column(style="dim")
    info.add_column()
    # User text (names, titles, utterances) is wrapped in Text: never parsed as markup.
    info.add_row("run", Text(meta.run_id + (f"  ({meta.name})" if meta.name else "")))
    info.add_row("scenario", Text(f"{meta.scenario.title} [{meta.scenario_ref}]"))
    info.add_row("round", f"{record.round}/{meta.total_rounds}")
    info.add_row("mind", Text(mind_name(meta.mind)))
    if meta.structured_modes:
        info.add_row("structured", Text(modes_line(meta.structured_modes)))
    info.add_row("seed", str(meta.seed))
    info.add_row("created", Text(meta.created))
    if meta.ancestry:
        chain = " → ".join(f"{link.run_id}@{link.round}" for link in meta.ancestry)
        info.add_row("lineage", Text(f"{chain} → {meta.run_id}"))
    for f in meta.pending.forced:
        info.add_row(
            "pending", Text(f"force {f.agent}: {f.mode.value} → {f.target}: {f.utterance}")
        )
    for e in meta.pending.events:
        info.add_row("pending", Text(f"inject: {e.text}"))
    for s in meta.snapshots:
        info.add_row("snapshot", Text(f"{s.name} @ round {s.round}"))
    return Group(
        info,
        Text(""),
        agents_table(meta, state),
        Text(""),
        matrix,
        Text(""),
        metrics_line(metrics),
    )


def agents_table(meta: RunMeta, state: WorldState) -> Table:
    """Each agent's role, archetype, emotion and two largest unmet needs."""
    agents = Table(box=None, pad_edge=False)
    for col in ("agent", "role", "archetype", "S", "largest unmet needs"):
        agents.add_column(col)
    for spec in meta.scenario.agents:
        a = state.agents[spec.name]
        gaps = sorted(((v.expected - v.current, n) for n, v in a.needs.items()), reverse=True)
        unmet = ", ".join(f"{n.replace('_', ' ')} {g:.1f}" for g, n in gaps[:2] if g > 0)
        agents.add_row(
            Text(spec.name), Text(spec.role), spec.archetype.value, f"{a.emotion:.2f}", unmet
        )
    return agents


def modes_line(modes: Mapping[str, str]) -> str:
    """How each model is asked for structured replies: ``openai/a json, openai/b schema``."""
    return ", ".join(f"{model} {mode}" for model, mode in modes.items())


def llm_summary(meta: RunMeta, history: History) -> RenderableType | None:
    """The end of ``run`` and ``resume``, and ``show``: the run's LLM calls, tokens, cost,
    how its structured answers went, the prefix cache, how well each model played per
    purpose (a loud line when a share passed its threshold) and the structured modes (None
    for a run without LLM calls)."""
    from engine.core.exchanges import RoundUsage, cache_line, endpoints_line
    from engine.core.tally import Tally, loud_lines, quality_line

    usages = history.usages()
    if not usages:
        return None
    total = RoundUsage.summed(usages)
    tokens = total.prompt_tokens + total.completion_tokens
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    rounds = f"{len(usages)} round{'s' * (len(usages) > 1)}"
    grid.add_row(
        "LLM calls",
        f"{total.calls:,} in {rounds}, {tokens:,} tokens ({total.prompt_tokens:,} prompt, "
        f"{total.completion_tokens:,} completion), ${total.cost_usd:.4f}",
    )
    grid.add_row(
        "answers",
        f"{total.structured:,} structured; {total.repairs} repaired, {total.clamped} clamped, "
        f"{total.degenerate} degenerate, {total.at_cap} at the caps, {total.reasks} re-asked, "
        f"{total.retries} retries, {total.fallbacks} fallbacks, {total.left_out} edges left "
        f"out, {total.missing_edges} still missing",
    )
    grid.add_row(
        "fell back",
        Text(
            f"{total.fallback_share:.1%} of the structured answers",
            "bold red" if total.degraded else "yellow" if total.warning else "",
        ),
    )
    grid.add_row(
        "prefix cache",
        cache_line(
            total.cached_tokens, total.cache_reported, total.shared_prefix, total.prompt_tokens
        ),
    )
    spread = endpoints_line(history.llm_calls())
    if spread is not None:
        grid.add_row("endpoints", Text(spread))
    rows = Tally().add(history.llm_calls()).rows()
    if rows:
        grid.add_row("reply quality", Text("\n".join(f"{q.model} {quality_line(q)}" for q in rows)))
    for line in loud_lines(rows):
        grid.add_row("⚠ quality", Text(line, "bold red"))
    if meta.structured_modes:
        grid.add_row("structured", Text(modes_line(meta.structured_modes)))
    merged = [model for model, role in meta.system_roles.items() if role == "merge"]
    if merged:
        grid.add_row("system text", Text(f"in the first user turn for {', '.join(merged)}"))
    return grid


def runs_rows(rows: Sequence[RunListing | TrialRuns]) -> Rows:
    """``list``'s cells (in the order given): one row per run with its lineage, name and
    named snapshots, a broken entry's reason last; a trial's folded runs as one row."""
    from engine.minds.spec import mind_spec

    from ..listing import TrialRuns, snapshot_names
    from .output import Rows

    lines: list[list[Plain]] = []
    for r in rows:
        if isinstance(r, TrialRuns):
            mind = "offline rule-based" if mind_spec(r.model).offline else r.model
            about = f"trial: {r.about()}; list --trial {r.trial} shows them"
            lines.append([r.trial, r.scenario, f"{len(r.runs)} runs", mind, "", about])
            continue
        if not r.ok:
            lines.append([r.run_id, "", "", "", "", r.reason])
            continue
        parent = f"{r.parent.run_id}@{r.parent.round}" if r.parent else ""
        mind = "offline rule-based" if mind_spec(r.model).offline else r.model
        done = f"{r.rounds_done}/{r.total_rounds}"
        snaps = snapshot_names(r)
        about = "; ".join(x for x in (r.name, f"snapshots {snaps}" if snaps else "") if x)
        lines.append([r.run_id, r.scenario_id or r.title, done, mind, parent, about])
    header = ["run", "scenario", "round", "mind", "parent", "name / snapshots / problem"]
    return Rows("runs", header, lines)


def runs_table(rows: Sequence[RunListing | TrialRuns]) -> Text:
    """``list``: one line per run (in the order given) with its lineage, name and named
    snapshots, broken entries in red with their reason.
    Columns are aligned by hand: a rich Table measures every cell (0.2 s for 500 runs)."""
    found = runs_rows(rows)
    header, lines = found.header, [[str(c) for c in row] for row in found.rows]
    widths = [max(len(row[k]) for row in [header, *lines]) for k in range(len(header) - 1)]
    text = Text()
    for row, style in [
        (header, "bold"),
        *((line, _row_style(r)) for line, r in zip(lines, rows, strict=True)),
    ]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        text.append("  ".join([*cells, row[-1]]) + "\n", style)
    text.rstrip()
    return text


def _row_style(row: RunListing | TrialRuns) -> str:
    from ..listing import TrialRuns

    if isinstance(row, TrialRuns):
        return "cyan"
    return "" if row.ok else "red"


def scenarios_table(entries: Mapping[str, Scenario | Exception]) -> Table:
    """``scenarios``: the library by id; a broken file shows its reason."""
    table = Table(box=None, pad_edge=False)
    for col in ("id", "title", "agents", "rounds", "conflict"):
        table.add_column(col)
    for sid, s in entries.items():
        if isinstance(s, Exception):
            table.add_row(f"[red]{sid}[/]", f"[red]{escape(str(s))}[/]", "", "", "")
            continue
        table.add_row(sid, escape(s.title), str(len(s.agents)), str(s.rounds), "●" * s.conflict)
    return table


def tasks_table(tasks: Mapping[str, Task]) -> Table:
    """``tasks``: the collaborative tasks by id, with their two starting castings."""
    table = Table(box=None, pad_edge=False)
    for col in ("id", "title", "utility", "hetero", "random"):
        table.add_column(col)
    for tid, t in tasks.items():
        table.add_row(
            tid,
            t.title,
            t.utility,
            "/".join(a.value for a in t.casting.hetero),
            "/".join(a.value for a in t.casting.random),
        )
    return table


def iteration_table(it: Iteration) -> Table:
    """One recasting iteration: each agent's vote on its archetype, with the rationale."""
    table = Table(
        title=f"iteration {it.iteration}: " + " / ".join(a.value for a in it.casting),
        title_justify="left",
    )
    table.add_column("agent")
    table.add_column("now")
    table.add_column("proposal")
    table.add_column("votes", justify="right")
    table.add_column("rationale")
    for v in it.decisions:
        table.add_row(
            v.agent,
            v.current.value,
            v.archetype.value if v.archetype else "keep",
            f"{v.votes}/{v.of}",
            escape(v.rationale),
        )
    return table


def _mean_cell(values: list[float]) -> Number:
    if not values:
        return Number("–", None)
    mean = sum(values) / len(values)
    return Number(f"{mean:.0f}" if abs(mean) >= 10 else f"{mean:.2f}", round(mean, 6))


def sweep_table(result: SweepResult) -> Table:
    """Mean metrics per model, team size and condition, over the repeated runs."""
    from engine.studies.families import family

    shown = family(result.task).metrics
    table = Table(
        title=f"{result.task}: {len(result.outcomes)} episodes (mean over runs)",
        title_justify="left",
    )
    table.add_column("model", no_wrap=True)
    table.add_column("agents", justify="right")
    table.add_column("condition", no_wrap=True)
    table.add_column("n", justify="right")
    for header in shown.values():
        table.add_column(header, justify="right")
    groups: dict[tuple[str, int, str], list] = {}
    for o in result.outcomes:
        c = o.condition
        groups.setdefault((c.model, c.agents, c.label()), []).append(o)
    for (model, agents, label), outs in groups.items():
        means = [
            _mean_cell([v for o in outs if (v := o.metrics.get(k)) is not None]) for k in shown
        ]
        table.add_row(
            model, Number(str(agents), agents), label, Number(str(len(outs)), len(outs)), *means
        )
    return table


def _signed(value: float | None) -> Number:
    return Number("–" if value is None else f"{value:+.3f}", _six(value))


def _six(value: float | None) -> float | None:
    """A value for a machine, without float noise (0.09999999999999998)."""
    return None if value is None else round(value, 6)


def _interval(low: float | None, high: float | None, fmt: str = "+.3f") -> Number:
    """``[low, high]``; for a machine, the two ends (columns ``ci_low`` and ``ci_high``)."""
    shown = "–" if low is None or high is None else f"[{low:{fmt}}, {high:{fmt}}]"
    return Number(shown, {"ci_low": _six(low), "ci_high": _six(high)})


def contrasts_table(result: SweepResult) -> Table:
    """The bootstrap contrasts of a sweep: question-level and paired for debate (App. B.3),
    run-level with each endpoint resampled on its own for GovSim (App. A.3)."""
    from engine.studies.families import family

    how = family(result.task).intervals
    table = Table(title=f"{how} ({result.resamples:,} resamples)", title_justify="left")
    for col in ("model", "agents", "relation", "topology", "contrast", "metric", "units"):
        table.add_column(col)
    table.add_column("Δ", justify="right")
    table.add_column("95% CI")
    table.add_column("dropped", justify="right")
    for row in result.contrasts:
        low, high = row["ci_low"], row["ci_high"]
        table.add_row(
            row["model"],
            Number(str(row["agents"]), row["agents"]),
            row["relation"],
            row["topology"],
            row["contrast"],
            row["metric"],
            Number(str(row["units"]), row["units"]),
            _signed(row["estimate"]),
            _interval(low, high),
            Number(str(row["dropped"]), row["dropped"]),
        )
    return table


def intervals_table(intervals: Mapping[str, Interval]) -> Table:
    """Metrics with their question-level percentile bootstrap intervals (App. B.3)."""
    first = next(iter(intervals.values()))
    title = (
        f"{first.level:.0%} bootstrap intervals, question-level "
        f"({first.resamples:,} resamples, {first.units} questions)"
    )
    table = Table(title=title, title_justify="left", min_width=len(title))
    for col in ("metric", "estimate", "interval", "dropped"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name, ci in intervals.items():
        table.add_row(
            name,
            Number("–" if ci.estimate is None else f"{ci.estimate:.3f}", _six(ci.estimate)),
            _interval(ci.low, ci.high, ".3f"),
            Number(str(ci.dropped), ci.dropped),
        )
    return table
