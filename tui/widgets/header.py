"""The run header and the current-event bar."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from engine import Simulation


def header_text(sim: Simulation, running: bool) -> Text:
    """Two lines: scenario, round, mind, state / run id, lineage, queued interventions."""
    state = ("▶ running", "bold green") if running else ("❚❚ paused", "bold yellow")
    if sim.finished and not running:
        state = ("■ finished", "bold")
    top = Text.assemble(
        state,
        ("  │  ", "dim"),
        (f"round {sim.round}/{sim.total_rounds}", "bold cyan"),
        ("  │  ", "dim"),
        (sim.scenario.title, "bold"),
    )
    bottom = Text.assemble((sim.mind.label, "magenta"))
    usage = [r.usage for r in sim.records if r.usage is not None]
    if usage:
        tokens = sum(u.prompt_tokens + u.completion_tokens for u in usage)
        bottom.append(
            f" {sum(u.calls for u in usage)} calls {tokens / 1000:.1f}k tok "
            f"${sum(u.cost_usd for u in usage):.4f}",
            style="cyan",
        )
        trouble = (
            sum(u.repairs for u in usage),
            sum(u.reasks for u in usage),
            sum(u.fallbacks for u in usage),
        )
        if any(trouble):
            bottom.append(" (repaired {} re-asked {} fallback {})".format(*trouble), style="yellow")
    bottom.append("  │  run ", style="dim")
    bottom.append(sim.run_id, style="bold")
    if sim.lineage:
        parent = sim.lineage[-1]
        bottom.append("  ⑂ from ", style="dim")
        bottom.append(f"{parent.run_id}@{parent.round}")
        if len(sim.lineage) > 1:
            bottom.append(f" (depth {len(sim.lineage)})", style="dim")
    if sim.meta.intervention:
        bottom.append(f"  intervention: {sim.meta.intervention}", style="yellow")
    queued = len(sim.pending.forced) + len(sim.pending.events)
    if queued:
        bottom.append(f"  │  {queued} queued for round {sim.round + 1}", style="yellow")
    for line in (top, bottom):
        line.no_wrap = True
        line.overflow = "ellipsis"
    text = Text("\n").join([top, bottom])
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def event_text(sim: Simulation) -> Text:
    """The events of the round just played and what is queued for the next one."""
    record = sim.records[-1]
    line = Text()
    if record.round == 0:
        line.append("Ready. ", style="bold")
        upcoming = sim.scenario.events_for(1)
        if upcoming:
            line.append("Round 1 opens with: ", style="dim")
            line.append(upcoming[0].text)
        else:
            line.append("Press n to play round 1.", style="dim")
    for e in sorted(record.events, key=lambda e: e.source != "injected"):
        who = f" (private to {', '.join(e.private_to)})" if e.private_to else ""
        kind = {"injected": "injected", "narrator": "scene"}.get(e.source, "event")
        line.append(f"R{record.round} {kind}{who}: ", style="bold yellow")
        line.append(e.text + " ")
    if not record.events and record.round:
        line.append(f"R{record.round}: no scripted event.", style="dim")
    for e in sim.pending.events:
        line.append(f"  next: {e.text}", style="italic yellow")
    for f in sim.pending.forced:
        line.append(f"  next: {f.agent} forced to {f.mode.value}", style="italic yellow")
    return line


class RunHeader(Static):
    """Header of the main screen."""

    DEFAULT_CSS = "RunHeader { height: 2; background: $panel; padding: 0 1; }"


class EventBar(Static):
    """The current scenario event (two lines at most)."""

    DEFAULT_CSS = "EventBar { height: auto; max-height: 3; padding: 0 1; }"
