"""Errors the engine raises for bad input; each carries one user-facing line."""

from __future__ import annotations


class SocialsimError(Exception):
    """Base class: ``str(err)`` is a complete, user-facing message."""


def incomplete_install(module: str, feature: str) -> SocialsimError:
    """The error of a dependency missing from a broken install (every feature's
    dependencies are installed with socialsim)."""
    return SocialsimError(
        f"{feature} needs {module}, which is missing from this Python: the install is "
        "incomplete; reinstall socialsim (pip install -e . in its folder)"
    )


class ScenarioError(SocialsimError):
    """A scenario file or library id that cannot be used."""


class SaveError(SocialsimError):
    """A save that cannot be read, written or locked."""


class RunLockedError(SaveError):
    """Another process holds the run's lock."""


class InterventionError(SocialsimError):
    """A forced action or injected event that does not fit the run."""


class RunFinishedError(SocialsimError):
    """Stepping a run that already reached its last round."""


class BudgetError(SocialsimError):
    """A call or cost cap was reached; the run stops after a finished round."""


class DegradedRunError(SocialsimError):
    """Most of a round's structured answers fell back: the round is saved, the run stops."""
