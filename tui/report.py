"""Rich renderables for the headless CLI: round summaries, run overviews, matrices."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine import Metrics, RoundRecord, RunListing, RunMeta, WorldState
from engine.minds.offline import LABEL as OFFLINE_LABEL

from .widgets.style import STATUS_GLYPH, fav_style

MODE_STYLE = {"public": "bold", "private": "magenta", "silent": "dim"}


def model_label(model: str) -> str:
    """How a run's mind is named to the user."""
    return OFFLINE_LABEL if model == "offline" else model


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


def metrics_line(m: Metrics) -> Text:
    """One line of seed 000 Tab. 1 metrics."""
    return Text.assemble(
        ("Fav ", "dim"),
        _fmt(m.mean_fav),
        ("  S ", "dim"),
        _fmt(m.mean_emotion),
        ("  recip ", "dim"),
        _fmt(m.reciprocity),
        ("  E-I ", "dim"),
        _fmt(m.ei_index),
        ("  balance ", "dim"),
        _fmt(m.balance, ".0f") + ("%" if m.balance is not None else ""),
        ("  repair ", "dim"),
        _fmt(m.repair, ".0f") + ("%" if m.repair is not None else ""),
    )


def metrics_block(m: Metrics) -> Text:
    """The metrics one per line, for narrow panels."""
    rows = [
        ("mean Fav", _fmt(m.mean_fav)),
        ("mean S", _fmt(m.mean_emotion)),
        ("reciprocity", _fmt(m.reciprocity)),
        ("E-I index", _fmt(m.ei_index)),
        ("balance", _fmt(m.balance, ".0f") + ("%" if m.balance is not None else "")),
        ("repair", _fmt(m.repair, ".0f") + ("%" if m.repair is not None else "")),
    ]
    return Text("\n").join(Text.assemble((f"{k:<12}", "dim"), v) for k, v in rows)


def round_summary(record: RoundRecord, total: int, metrics: Metrics) -> RenderableType:
    """What happened in one round: events, utterances in order, big changes, metrics."""
    parts: list[RenderableType] = [Text(f"Round {record.round}/{total}", style="bold cyan")]
    for e in record.events:
        who = f" (private to {', '.join(e.private_to)})" if e.private_to else ""
        tag = "injected" if e.source == "injected" else "event"
        parts.append(Text.assemble((f"  [{tag}{who}] ", "yellow"), e.text))
    table = Table(box=None, show_header=False, pad_edge=False, expand=False)
    table.add_column(justify="right", style="dim")
    table.add_column(no_wrap=True)
    table.add_column(ratio=1)
    spoken = sorted((a for a in record.actions if a.order is not None), key=lambda a: a.order or 0)
    for a in spoken:
        arrow = f"→{a.target}" if a.target and a.target != "all" else ""
        mode = "" if a.mode.value == "public" else f" [{a.mode.value}]"
        forced = " (forced)" if a.forced else ""
        table.add_row(
            str(a.order),
            Text(f"{a.speaker}{arrow}{mode}{forced}", MODE_STYLE[a.mode.value]),
            Text(a.utterance),
        )
    silent = [a.speaker for a in record.actions if a.order is None]
    parts.append(table)
    if silent:
        parts.append(Text(f"  silent: {', '.join(silent)}", style="dim"))
    flips = [c for c in record.relation_changes if c.status != c.previous_status]
    for c in flips[:6]:
        parts.append(
            Text(
                f"  {c.source}→{c.target}: {c.previous_status.value} → {c.status.value}"
                f" (fav {c.fav:+.2f}){' — ' + c.summary if c.summary else ''}",
                style="italic",
            )
        )
    parts.append(Text.assemble("  ", metrics_line(metrics)))
    return Group(*parts)


def fav_matrix(state: WorldState) -> Table:
    """The directed favorability matrix: row = from, column = to, glyph = status."""
    names = list(state.agents)
    table = Table(title="favorability (row → column)", box=None, pad_edge=False)
    table.add_column("from \\ to", style="bold")
    for n in names:
        table.add_column(Text(n[:8]), justify="right")
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


def run_overview(meta: RunMeta, records: list[RoundRecord], metrics: Metrics) -> RenderableType:
    """``show``: identity, lineage, pending interventions, agents, matrix, metrics."""
    state = records[-1].state
    info = Table.grid(padding=(0, 2))
    info.add_column(style="dim")
    info.add_column()
    # User text (names, titles, utterances) is wrapped in Text: never parsed as markup.
    info.add_row("run", Text(meta.run_id + (f"  ({meta.name})" if meta.name else "")))
    info.add_row("scenario", Text(f"{meta.scenario.title} [{meta.scenario_ref}]"))
    info.add_row("round", f"{records[-1].round}/{meta.total_rounds}")
    info.add_row("mind", Text(model_label(meta.model)))
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
    return Group(
        info, Text(""), agents, Text(""), fav_matrix(state), Text(""), metrics_line(metrics)
    )


def runs_table(rows: list[RunListing]) -> Table:
    """``list``: runs with lineage; broken entries with their reason."""
    table = Table(box=None, pad_edge=False)
    table.add_column("run", no_wrap=True)
    for col in ("scenario", "round", "mind", "parent", "name / problem"):
        table.add_column(col)
    for r in rows:
        if not r.ok:
            table.add_row(Text(r.run_id, "red"), "", "", "", "", Text(r.reason, "red"))
            continue
        parent = f"{r.parent.run_id}@{r.parent.round}" if r.parent else ""
        mind = "offline rule-based" if r.model == "offline" else r.model
        table.add_row(
            Text(r.run_id),
            Text(r.scenario_id or r.title),
            f"{r.rounds_done}/{r.total_rounds}",
            Text(mind),
            Text(parent),
            Text(r.name),
        )
    return table
