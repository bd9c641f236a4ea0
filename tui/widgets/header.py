"""The run header, the warning strip (degraded LLM answers) and the event strip.

The header fits its width: where the full line does not fit, the run ids are abbreviated
and the lineage (``⑂ parent@round``) comes before the mind, so it is never the part cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from engine import ForcedAction, Mode, RoundRecord, ScenarioEvent, Simulation, SocialsimError
from engine.core.exchanges import RoundUsage, main_failure
from engine.core.quality import badge
from engine.core.textsafe import one_line
from engine.llm.throughput import duration
from engine.saves.runmeta import TaskOutcome

#: A generated run id: scenario, date, time, four hex digits.
GENERATED_ID = re.compile(r"^(?P<head>.+)-\d{8}-\d{6}-(?P<tail>[0-9a-f]{4})$")


def short_id(run_id: str, limit: int = 16) -> str:
    """``tavern-20261130-091456-eddd`` -> ``tavern…eddd``; other long ids keep both ends."""
    match = GENERATED_ID.match(run_id)
    if match:
        return f"{match['head'][: limit - 5]}…{match['tail']}"
    if len(run_id) <= limit:
        return run_id
    half = (limit - 1) // 2
    return f"{run_id[:half]}…{run_id[-(limit - 1 - half) :]}"


def usage_totals(usages: Iterable[RoundUsage]) -> RoundUsage | None:
    """The sum of the rounds' LLM usage (None when no round called a model)."""
    rows = list(usages)
    return RoundUsage.summed(rows) if rows else None


def task_score(outcome: TaskOutcome) -> str:
    """A scored task episode's utility on its scale: ``score 1/1 (top choice right)``,
    ``score -4 (0 best, -12 worst: L1 distance to the experts)``."""
    from engine.studies.tasks.spec import load_task

    try:
        task = load_task(outcome.task)
    except SocialsimError:
        return f"score {outcome.utility:g}"
    u = outcome.utility
    if task.utility == "top1":
        return f"score {u:g}/1 (top choice {'right' if u else 'wrong'})"
    if task.utility == "neg-l1":
        worst = len(task.items) ** 2 // 2
        return f"score {u:g} (0 best, -{worst} worst: L1 distance to the experts)"
    return f"score {u:g}/1 ({'a' if u else 'no'} Pareto-optimal deal)"


def in_flight_text(sim: Simulation, compact: bool = False) -> str:
    """``3 calls in flight, oldest 12 s`` while a round waits on LLM calls (else empty)."""
    p = sim.progress.now()
    age = p.oldest_age()
    if age is None:
        return ""
    if compact:
        return f"{p.in_flight} in flight, {duration(age)}"
    calls = "call" if p.in_flight == 1 else "calls"
    return f"{p.in_flight} {calls} in flight, oldest {duration(age)}"


def header_text(sim: Simulation, running: bool, width: int | None = None) -> Text:
    """Two lines: state, round, LLM calls in flight, scenario / mind, usage, run id,
    lineage, queued interventions. Where they are wider than ``width``, the run ids are
    abbreviated, then the lines compacted."""
    usage = usage_totals(sim.history.usages())  # from the save's index: no round is read
    state = ("▶ running", "bold green") if running else ("❚❚ paused", "bold yellow")
    if sim.finished and not running:
        state = ("■ finished", "bold")
    lines = []
    for level in range(3):  # full; run ids abbreviated; compact
        compact = level == 2
        sep = " │ " if compact else "  │  "
        flight = in_flight_text(sim, compact) if running else ""
        top = Text.assemble(
            state,
            (sep, "dim"),
            (f"round {sim.round}/{sim.total_rounds}", "bold cyan"),
            *([(sep, "dim"), (flight, "yellow")] if flight else []),
            (sep, "dim"),
            (sim.scenario.title, "bold"),
        )
        if sim.meta.outcome is not None:
            top.append(sep, style="dim")
            top.append(task_score(sim.meta.outcome), style="bold magenta")
        bottom = _bottom(sim, usage, short_ids=level > 0, compact=compact)
        lines = [top, bottom]
        if width is None or max(len(top), len(bottom)) <= width:
            break
    for line in lines:
        line.no_wrap = True
        line.overflow = "ellipsis"
    text = Text("\n").join(lines)
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def _bottom(sim: Simulation, usage: RoundUsage | None, short_ids: bool, compact: bool) -> Text:
    """Mind, usage, run and lineage; compact: run and lineage first, the mind by its model."""
    ident = short_id if short_ids else (lambda run_id: run_id)
    run = Text.assemble(("run ", "dim"), (ident(sim.run_id), "bold"))
    if sim.lineage:
        parent = sim.lineage[-1]
        run.append(" ⑂ " if compact else "  ⑂ from ", style="dim")
        run.append(f"{ident(parent.run_id)}@{parent.round}")
        if len(sim.lineage) > 1 and not compact:
            run.append(f" (depth {len(sim.lineage)})", style="dim")
    if sim.meta.intervention:
        run.append(f"  intervention: {sim.meta.intervention}", style="yellow")
    mind = Text(sim.meta.mind.model if compact else sim.mind.label, style="magenta")
    modes = structured_modes(sim)
    if modes:
        mind.append(f" · {modes}", style="magenta")
    if usage is not None:
        tokens = (usage.prompt_tokens + usage.completion_tokens) / 1000
        if compact:
            mind.append(f" {usage.calls} calls ${usage.cost_usd:.4f}", style="cyan")
        else:
            mind.append(
                f" {usage.calls} calls {tokens:.1f}k tok ${usage.cost_usd:.4f}", style="cyan"
            )
        trouble = [
            f"{label} {n}"
            for label, n in (
                ("repaired", usage.repairs),
                ("re-asked", usage.reasks),
                ("fallback", usage.fallbacks),
            )
            if n
        ]
        if trouble and not compact:
            mind.append(f" ({', '.join(trouble)})", style="yellow")
        quality = badge(usage)
        if quality is not None and not compact:
            mind.append(f" {quality[0]}", style="bold red" if quality[1] else "yellow")
    sep = Text(" │ " if compact else "  │  ", style="dim")
    parts = [run, mind] if compact else [mind, run]
    queued = len(sim.pending.forced) + len(sim.pending.events)
    if queued:
        parts.append(Text(f"{queued} queued" + ("" if compact else f" for round {sim.round + 1}")))
        parts[-1].stylize("yellow")
    return sep.join(parts)


def structured_modes(sim: Simulation) -> str:
    """How the run's models are asked for structured replies, compactly: ``json`` when they
    all are asked alike, else ``a:json b:schema`` (empty offline)."""
    modes = sim.meta.structured_modes or sim.mind.structured_modes()
    if len(set(modes.values())) == 1:
        return next(iter(modes.values()))
    return " ".join(f"{model.rsplit('/', 1)[-1]}:{mode}" for model, mode in modes.items())


def fallback_text(record: RoundRecord) -> Text | None:
    """One line while more than 10% of the round's structured answers fell back: the share,
    the model and its most common error (None otherwise)."""
    usage = record.usage
    if usage is None or not usage.warning:
        return None
    model, error, count = main_failure(record.llm_calls)
    fell, total = usage.structured_fallbacks + usage.missing_edges, usage.structured
    return Text.assemble(
        (f"⚠ R{record.round}: {usage.fallback_share:.0%} of structured answers fell back", "bold"),
        one_line(f" ({fell}/{total + usage.missing_edges}) · {model}: {error} ({count}x)"),
    )


def stopped_text(sim: Simulation, message: str) -> Text:
    """Why the run stopped after a degraded round (the engine's line) and how to go on."""
    return Text.assemble(
        ("⛔ RUN STOPPED", "bold"),
        one_line(
            f"  {message}. To play on regardless: socialsim resume {sim.run_id} "
            "--tolerate-fallbacks"
        ),
    )


def _private(event: ScenarioEvent) -> str:
    return f" (private to {', '.join(event.private_to)})" if event.private_to else ""


def forced_text(forced: ForcedAction) -> str:
    """``Edmund: private to Nell "We sell."`` -- what a forced action will make the agent do."""
    if forced.mode is Mode.SILENT:
        return f"{forced.agent}: silent"
    to = f" to {forced.target}" if forced.target and forced.target != "all" else ""
    said = f' "{forced.utterance}"' if forced.utterance else ""
    return f"{forced.agent}: {forced.mode.value}{to}{said}"


def pending_lines(sim: Simulation) -> list[Text]:
    """What is queued for the next round, one item a line; private events say so."""
    after = sim.round + 1
    lines = [
        Text.assemble((f"next R{after} event{_private(e)}: ", "bold italic yellow"), e.text)
        for e in sim.pending.events
    ]
    lines += [
        Text.assemble((f"next R{after} forced ", "bold italic yellow"), forced_text(f))
        for f in sim.pending.forced
    ]
    return lines


def event_lines(sim: Simulation, record: RoundRecord) -> list[Text]:
    """The events of the round just played (``record``) and what is queued for the next."""
    lines: list[Text] = []
    if record.round == 0:
        upcoming = sim.scenario.events_for(1)
        line = Text.assemble(("Ready. ", "bold"))
        if upcoming:
            line.append("Round 1 opens with: ", style="dim")
            line.append(upcoming[0].text)
        else:
            line.append("Press n to play round 1.", style="dim")
        lines.append(line)
    for e in sorted(record.events, key=lambda e: e.source != "injected"):
        kind = {"injected": "injected", "narrator": "scene"}.get(e.source, "event")
        lines.append(
            Text.assemble((f"R{record.round} {kind}{_private(e)}: ", "bold yellow"), e.text)
        )
    if not record.events and record.round:
        lines.append(Text(f"R{record.round}: no scripted event.", style="dim"))
    return lines + pending_lines(sim)


def started_lines(round_no: int, round_events: Sequence[ScenarioEvent]) -> list[Text]:
    """The strip while a round is played: its number and its events."""
    lines = [Text(f"Round {round_no} under way…", style="bold")]
    lines += [
        Text.assemble((f"R{round_no}{_private(e)}: ", "bold yellow"), e.text) for e in round_events
    ]
    return lines


class RunHeader(Widget):
    """Header of the main screen: two lines fitted to its width."""

    DEFAULT_CSS = "RunHeader { height: 2; background: $panel; padding: 0 1; }"
    running: reactive[bool] = reactive(False)

    def __init__(self, sim: Simulation, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sim = sim
        self._ticks: Timer | None = None

    def watch_running(self, running: bool) -> None:
        """While a round runs, redraw every second: the calls in flight and their age."""
        if running and self._ticks is None and self.sim.meta.llm is not None:
            self._ticks = self.set_interval(1.0, self.refresh)
        elif not running and self._ticks is not None:
            self._ticks.stop()
            self._ticks = None

    def show(self, sim: Simulation) -> None:
        """Draw ``sim`` as it is now."""
        self.sim = sim
        self.refresh()

    def render(self) -> Text:
        return header_text(self.sim, self.running, self.size.width)


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


class EventBar(Widget):
    """The round's events and what is queued, one item a line: folded to a line or two
    (saying how much is hidden), or expanded to every line (up to half the screen)."""

    DEFAULT_CSS = "EventBar { height: auto; padding: 0 1; }"
    expanded: reactive[bool] = reactive(False, layout=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.items: list[Text] = []

    def show(self, items: list[Text]) -> None:
        """Show ``items``, one or more lines each."""
        self.items = items
        self.refresh(layout=True)

    def on_click(self, event: events.Click) -> None:
        self.expanded = not self.expanded

    def folded_lines(self) -> int:
        """Lines shown while folded: one on a short terminal, else two."""
        return 1 if self.app.size.height < 30 else 2

    def lines(self, width: int) -> list[Text]:
        """The lines drawn at ``width``: all that fit the cap, the last one saying what
        the cap hides."""
        if width <= 0:
            return []
        console: Console = self.app.console
        wrapped = [line for item in self.items for line in item.wrap(console, width)]
        cap = max(1, self.app.size.height // 2) if self.expanded else self.folded_lines()
        if len(wrapped) <= cap:
            return wrapped
        shown = wrapped[:cap]
        hint = f" … +{len(wrapped) - cap}" + ("" if self.expanded else " (i: all)")
        last = shown[-1]
        last.truncate(max(0, width - len(hint)))
        last.append(hint, style="bold dim")
        return shown

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Text:
        text = Text("\n").join(self.lines(self.size.width))
        text.no_wrap = True
        return text
