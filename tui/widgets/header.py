"""The run header, the warning strip (degraded LLM answers) and the current-event bar."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from engine import Simulation
from engine.records import main_failure


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
    modes = structured_modes(sim)
    if modes:
        bottom.append(f" · {modes}", style="magenta")
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


def structured_modes(sim: Simulation) -> str:
    """How the run's models are asked for structured replies, compactly: ``json`` when they
    all are asked alike, else ``a:json b:schema`` (empty offline)."""
    modes = sim.meta.structured_modes or sim.mind.structured_modes()
    if len(set(modes.values())) == 1:
        return next(iter(modes.values()))
    return " ".join(f"{model.rsplit('/', 1)[-1]}:{mode}" for model, mode in modes.items())


def fallback_text(sim: Simulation) -> Text | None:
    """One line while more than 10% of the latest round's structured answers fell back: the
    share, the model and its most common error (None otherwise)."""
    record = sim.records[-1]
    usage = record.usage
    if usage is None or not usage.warning:
        return None
    model, error, count = main_failure(record.llm_calls)
    fell, total = usage.structured_fallbacks + usage.missing_edges, usage.structured
    return Text.assemble(
        (f"⚠ R{record.round}: {usage.fallback_share:.0%} of structured answers fell back", "bold"),
        f" ({fell}/{total + usage.missing_edges}) · {model}: {error} ({count}x)",
    )


def stopped_text(sim: Simulation, message: str) -> Text:
    """Why the run stopped after a degraded round (the engine's line) and how to go on."""
    return Text.assemble(
        ("⛔ RUN STOPPED", "bold"),
        f"  {message}. To play on regardless: socialsim resume {sim.run_id} --tolerate-fallbacks",
    )


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

    DEFAULT_CSS = """
    RunHeader {
        height: 2; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """


class WarningStrip(Static):
    """A bar under the header, hidden while there is nothing to warn about: the latest
    round's fallbacks (one line, warning colour), or a degraded stop (error colour) that
    stays until another round starts. The text says it in words too, for NO_COLOR."""

    DEFAULT_CSS = """
    WarningStrip {
        display: none; height: auto; max-height: 5; padding: 0 1;
        background: $warning-muted; color: $text;
    }
    WarningStrip.shown { display: block; }
    WarningStrip.warning { text-wrap: nowrap; text-overflow: ellipsis; }
    WarningStrip.stopped { background: $error-muted; }
    """

    def set_notice(self, text: Text | None, *, stopped: bool = False) -> None:
        """Show ``text`` (None hides the strip)."""
        self.update(text or "")
        self.set_class(text is not None, "shown")
        self.set_class(text is not None and not stopped, "warning")
        self.set_class(stopped, "stopped")


class EventBar(Static):
    """The current scenario event (two lines at most)."""

    DEFAULT_CSS = "EventBar { height: auto; max-height: 3; padding: 0 1; }"
