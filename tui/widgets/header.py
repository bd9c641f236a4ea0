"""The run header, the warning strip (degraded LLM answers) and the event strip.

The header fits its width: where the full line does not fit, the run ids are abbreviated
and the lineage (``⑂ parent@round``) comes before the mind, so it is never the part cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from rich.text import Text
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from engine import ForcedAction, Mode, ScenarioEvent, Simulation, SocialsimError
from engine.core.exchanges import RoundUsage, main_failure
from engine.core.state import RoundLog
from engine.core.tally import badge
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


#: What a phase is doing, as the header says it.
DOING = {"narrate": "narrating", "decide": "deciding", "speak": "speaking", "judge": "judging"}


def round_text(sim: Simulation, compact: bool = False) -> str:
    """Where the round's LLM calls stand, as ``socialsim run``'s bar says it: ``speaking ·
    7/~15 calls · 2 in flight, oldest 12 s · ~1.2 min left`` (empty before the round's first
    phase)."""
    p = sim.progress.now()
    if p.held:
        return held_text(p.in_flight, sim.journaled)
    if not p.phase:
        return ""
    of = f"/~{p.expected}" if p.expected is not None else ""
    eta, age = p.eta(), p.oldest_age()
    if compact:
        parts = [f"{DOING.get(p.phase, p.phase)} {p.done}{of}"]
        parts += [f"{p.in_flight} in flight"] if p.in_flight else []
        parts += [f"{duration(eta)} left"] if eta is not None else []
        return " · ".join(parts)
    parts = [DOING.get(p.phase, p.phase), f"{p.done}{of} calls"]
    if age is not None:
        calls = "call" if p.in_flight == 1 else "calls"
        parts.append(f"{p.in_flight} {calls} in flight{p.by_endpoint()}, oldest {duration(age)}")
    parts.append(f"~{duration(eta)} left" if eta is not None else "time left unknown")
    return " · ".join(parts)


def held_text(in_flight: int, kept: int) -> str:
    """``pausing: 2 calls in flight``, then ``paused mid-round (5 exchanges kept)`` (``kept``:
    in the run's journal; none: before the round's first call)."""
    if in_flight:
        return f"pausing: {in_flight} call{'s' * (in_flight != 1)} in flight"
    if not kept:
        return "paused before the round's first call · r goes on"
    return f"paused mid-round ({kept} exchange{'s' * (kept != 1)} kept) · r goes on"


def header_text(sim: Simulation, running: bool, width: int | None = None) -> Text:
    """Two lines: state, round, LLM calls in flight, scenario / mind, usage, run id,
    lineage, queued interventions. Where they are wider than ``width``, the run ids are
    abbreviated, then the lines compacted."""
    usage = usage_totals(sim.history.usages())  # from the save's index: no round is read
    state = ("▶ running", "bold green") if running else ("❚❚ paused", "bold yellow")
    if running and sim.held:
        state = ("❚❚ pausing" if sim.progress.now().in_flight else "❚❚ paused", "bold yellow")
    if sim.finished and not running:
        state = ("■ finished", "bold")
    lines = []
    for level in range(3):  # full; run ids abbreviated; compact
        compact = level == 2
        sep = " │ " if compact else "  │  "
        flight = round_text(sim, compact) if running and sim.meta.llm is not None else ""
        playing = sim.progress.now().round if flight else sim.round  # the round under way
        top = Text.assemble(
            state,
            (sep, "dim"),
            (f"round {playing}/{sim.total_rounds}", "bold cyan"),
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
        if width is not None:
            line.truncate(width, overflow="ellipsis")
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
    return " ".join(f"{_short(key)}:{mode}" for key, mode in modes.items())


def _short(key: str) -> str:
    """``gemma`` of ``openai/gemma``; ``gemma@127.0.0.1:8101`` of a model at an endpoint
    (``openai/gemma @ http://127.0.0.1:8101/v1``)."""
    model, _, url = key.partition(" @ ")
    name = model.rsplit("/", 1)[-1]
    return f"{name}@{urlsplit(url).netloc}" if url else name


def fallback_text(record: RoundLog) -> Text | None:
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


def failed_text(sim: Simulation, failed: int, message: str) -> Text:
    """Why round ``failed`` failed (the engine's line) and where the run stands."""
    return Text.assemble(
        (f"⛔ ROUND {failed} FAILED", "bold"),
        one_line(
            f"  {message.rstrip('.')}. The run stays at round {sim.round} as saved; "
            f"n plays round {failed} again."
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


def event_lines(sim: Simulation, record: RoundLog) -> list[Text]:
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
