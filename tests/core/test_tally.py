"""The tally of a run's exchanges per model and purpose, its loud line and the app's badge."""

from __future__ import annotations

from engine.core.exchanges import LLMCall, RoundUsage
from engine.core.tally import Tally, badge, loud_lines, quality_line


def call(purpose: str, outcome: str = "ok", key: str = "k", **kw: object) -> LLMCall:
    return LLMCall(
        key=key, purpose=purpose, agent="a", model="openai/gemma", messages=[],
        response="{}", outcome=outcome, **kw,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_tally_counts_replies_and_questions_and_says_loudly_when_a_share_passes() -> None:
    calls = [
        call("speak", "degenerate", "s1", flaw="echo"),
        call("speak", "degenerate", "s1:again", flaw="copy"),  # asked again in vain
        call("speak", "degenerate", "s2", flaw="empty"),
        call("speak", key="s2:again"),
        call("speak", key="s3"),
        call("judge", key="j1", at_cap=True),
        call("judge", key="j2", at_cap=True, clamped=["delta"]),
        call("judge", key="j3"),
    ]
    judge, speak = Tally().add(calls).rows()
    assert (speak.replies, speak.degenerate, speak.questions, speak.fallen_back) == (5, 3, 3, 1)
    assert speak.kinds == {"echo": 1, "copy": 1, "empty": 1}
    assert (judge.replies, judge.at_cap, judge.clamped, judge.questions) == (3, 2, 1, 3)
    assert quality_line(speak) == (
        "speak: 5 replies, 60% degenerate (copy 1, echo 1, empty 1), 33% fell back"
    )
    assert quality_line(judge) == "judge: 3 replies, 33% clamped, 67% at the caps"
    (line,) = loud_lines([speak, judge])
    assert line == (
        "openai/gemma: 60% of utterances were degenerate (copy 1, echo 1, empty 1); 33% of "
        "utterances fell back; 67% of judgements at the caps; 33% of judgements clamped — its "
        "social dynamics measure the model's limits, not the scenario"
    )
    assert loud_lines([judge.model_copy(update={"at_cap": 1, "clamped": 0})]) == []


def test_the_header_badge_gives_the_shares_of_the_calls_and_turns_loud_past_a_threshold() -> None:
    assert badge(RoundUsage(calls=10)) is None
    assert badge(RoundUsage(calls=10, degenerate=1)) == ("⚑ 10% degenerate", False)
    assert badge(RoundUsage(calls=10, degenerate=3, at_cap=4)) == (
        "⚑ 30% degenerate · 40% at the caps",
        True,
    )
