"""Cost and time before you spend them: the dialog a new LLM run opens with when its estimate
is above the threshold (``socialsim tui --confirm-above``), or, against an ``--api-base``,
with the time measured there whatever the price. Enter starts, Esc quits before any round."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from engine.llm.throughput import duration
from engine.studies.estimate import Estimate, Span

from .forms import Form


def _span(s: Span, money: bool = False) -> str:
    f = (lambda v: f"${v:,.4f}") if money else (lambda v: f"{v:,.0f}")
    return f"~{f(s.expected)}  [{f(s.low)}–{f(s.high)}]"


def time_lines(e: Estimate) -> list[str]:
    """The run's measured time, a round's first (empty: not measured, nothing to say)."""
    w = e.wall_s
    if w is None:
        return [f"time       not measured ({e.unmeasured})"] if e.unmeasured else []
    rounds = max(1, e.rounds)
    return [
        f"a round    ~{duration(w.expected / rounds)}",
        f"the run    ~{duration(w.expected)}  [{duration(w.low)}–{duration(w.high)}]",
    ]


def spend_lines(e: Estimate, threshold: str) -> list[str]:
    """The estimate as the dialog shows it: time first when it was measured."""
    cost = _span(e.cost_usd, money=True) if e.cost_usd is not None else e.cost_text()
    where = [f"Timed at the run's server: {e.speed.text()}."] if e.speed is not None else []
    return [
        f"{e.rounds} rounds; expected [low–high], from {e.basis}:",
        *time_lines(e),
        f"LLM calls  {_span(e.calls)}",
        f"tokens     {_span(e.tokens)}",
        f"cost       {cost}",
        "",
        *where,
        f"Asked before the run (--confirm-above {threshold}). No round has been played yet.",
    ]


class SpendScreen(Form):
    """Start the LLM run (Enter) or quit without a call (Esc)."""

    title_text = "Start this LLM run?"
    keys_text = "Enter start · Esc quit without spending"

    def __init__(self, estimate: Estimate, threshold: str) -> None:
        super().__init__(lambda: None)
        self.estimate = estimate
        self.threshold = threshold

    def fields(self) -> ComposeResult:
        yield Static("\n".join(spend_lines(self.estimate, self.threshold)), markup=False)
