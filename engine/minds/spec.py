"""Which mind plays a run: the offline rule-based model, or LLMs with their settings.

One typed value travels through every entry point (CLI, app, simulation, studies)
instead of a model string beside optional settings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..llm.settings import LLMSettings

OFFLINE_LABEL = "offline rule-based model"
#: The version of the offline model's dynamics new runs play (its strengths by version:
#: ``engine/minds/offline/params.py``, ``DYNAMICS``); runs saved before versions were
#: recorded play version 1.
DYNAMICS_VERSION = 5


class Offline(BaseModel):
    """The offline rule-based model: deterministic from the run seed, no network."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["offline"] = "offline"
    #: Which version of the model's dynamics plays (saved with the run as ``dynamics``).
    dynamics: int = Field(DYNAMICS_VERSION, ge=1, le=DYNAMICS_VERSION)

    @property
    def model(self) -> str:
        """The ``--model`` value that names it."""
        return "offline"

    @property
    def offline(self) -> bool:
        return True

    @property
    def label(self) -> str:
        return OFFLINE_LABEL


OFFLINE = Offline()

#: The one value for "which mind": offline, or the LLM settings.
MindSpec = Offline | LLMSettings


def mind_spec(model: str = "offline", **settings: object) -> MindSpec:
    """The spec for a ``--model`` value; ``settings`` are further LLM settings."""
    if model == "offline":
        return OFFLINE
    return LLMSettings.model_validate({"model": model, **settings})
