"""Multi-agent debate under relational priors (Relational priors Sec. 4.2, App. B).

Protocol (App. B.1, AutoGen-style): ``k`` agents answer a multiple-choice question
independently (round 0), then revise ``rounds`` times (default 2), each revision seeing the
other agents' responses of the previous round and keeping its own dialogue history. The
relational prior (:mod:`engine.core.priors`) is rendered into each agent's system prompt and is
the only thing that varies between conditions: the protocol is fixed.

Every agent answer is a question asked of a mind (``mind.ask``), key
``debate:{qid}:r{round}:{agent}``: the offline mind answers by a seeded rule model
(:mod:`.rules`), an LLM mind asks the agent's model (:mod:`.prompts`). Metrics follow
App. B.2 and B.4 exactly (:mod:`.scoring`).
"""

from __future__ import annotations

from .agents import agent_names, relational_block
from .extract import extract_answer
from .play import DebateResult, run_debate
from .questions import DebateQuestion, load_questions, sample_questions
from .scoring import DebateTrace, metrics

__all__ = [
    "DebateQuestion",
    "DebateResult",
    "DebateTrace",
    "agent_names",
    "extract_answer",
    "load_questions",
    "metrics",
    "relational_block",
    "run_debate",
    "sample_questions",
]
