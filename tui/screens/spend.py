"""Cost before you spend: the dialog an LLM run opens with when its estimate is above the
threshold (``socialsim tui --confirm-above``). Enter starts, Esc quits before any call."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from engine.studies.estimate import Estimate, Span

from .forms import Form


def _span(s: Span, money: bool = False) -> str:
    f = (lambda v: f"${v:,.4f}") if money else (lambda v: f"{v:,.0f}")
    return f"~{f(s.expected)}  [{f(s.low)}–{f(s.high)}]"


def spend_lines(e: Estimate, threshold: str) -> list[str]:
    """The estimate as the dialog shows it."""
    cost = _span(e.cost_usd, money=True) if e.cost_usd is not None else e.cost_text()
    return [
        f"{e.rounds} rounds; expected [low–high], from {e.basis}:",
        f"LLM calls  {_span(e.calls)}",
        f"tokens     {_span(e.tokens)}",
        f"cost       {cost}",
        "",
        f"Above the confirmation threshold ({threshold}). Nothing has been sent yet.",
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
