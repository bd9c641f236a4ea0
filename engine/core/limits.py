"""The bounds every entry point enforces (scenario files, the command line, the app), so an
over-large request fails with one line before anything is written."""

from __future__ import annotations

#: Rounds of a run, from a scenario file, ``--rounds`` or an extension on resume.
MAX_ROUNDS = 10_000
#: Agents of a scenario. A round's work and a state's size grow with the square of the
#: cast; bench/bench_engine.py measures rounds at up to 1,000 agents.
MAX_AGENTS = 2_000
#: Size of a scenario file (a 2,000-agent cast with a fifth of its relations listed, a
#: table each, fits: bench/casts.py).
MAX_SCENARIO_BYTES = 64 * 1024 * 1024
#: Nesting of tables and arrays in a scenario file (the format itself needs 5).
MAX_DEPTH = 20
#: Entries of one list of an agent's persona (traits, talking points, private facts,
#: evidence) and of a rule's or criterion's cues: more than a person writes for one.
MAX_PERSONA_ITEMS = 100
#: Scripted events of a scenario (or of one intervention): one a round of the longest run.
MAX_EVENTS = MAX_ROUNDS
#: Rules, criteria, questionnaires, interventions, factions, measurements and the items
#: of one questionnaire.
MAX_SECTION_ITEMS = 1_000


def rounds_problem(total: int) -> str | None:
    """Why ``total`` cannot be a run's number of rounds (None: it can)."""
    if 1 <= total <= MAX_ROUNDS:
        return None
    return f"a run has 1 to {MAX_ROUNDS:,} rounds (got {total:,})"


def check_rounds(total: int, what: str = "--rounds") -> int:
    """``total`` if it is a possible number of rounds for a run, else a one-line error
    naming ``what``."""
    problem = rounds_problem(total)
    if problem:
        from ..errors import SocialsimError

        raise SocialsimError(f"{what}: {problem}")
    return total


#: Seeds: whole numbers 0 .. 2**63 - 1 (what numpy's generators and the save take as they are).
MAX_SEED = 2**63 - 1
#: A run's label (``--name``, the app's snapshot and branch names): one line of text.
MAX_LABEL_CHARS = 200
#: Text a person types into the app (an injected event, a forced utterance).
MAX_TEXT_CHARS = 4_000
#: An utterance, whoever speaks (a model, a person): cut to this before it enters the
#: round, and with it any history, prompt or save; the game master's told narration too.
MAX_UTTERANCE_CHARS = 2_000
#: Seeds of one trial (``socialsim trial --seeds``): each plays a prefix and one run per arm.
MAX_TRIAL_SEEDS = 10_000
