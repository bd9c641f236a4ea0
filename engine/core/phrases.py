"""Whether an intent or a summary (the memory a judgement leaves) means something: words,
not debris, not a bare value, not names alone, not the schema's description copied; and
whether an intent says the agent keeps silent."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .naming import only_names
from .quality import Flaw, debris, runs, scale_labels, wordless, words

#: An intent or summary whose word pairs are at least this share of the instructions' copies
#: the schema's description ("one sentence", "one sentence (public only) or null when").
DESCRIPTION_SHARE = 0.6

#: Words that alone say no intent and no memory: a yes or a no, an empty value ("not
#: applicable", "none given"), one of a decision's values (a mode, a stance, everyone) or a
#: word that only begins a phrase.
_BARE = frozenset(
    "yes no ok okay none null nil na unknown not yet found clear sure maybe true false one "
    "nothing unclear applicable relevant available given specified "
    "all everyone public private silent support oppose neutral want to do it".split()
)
#: One name of words joined by underscores, as a key or a value of code is spelled.
_KEY = re.compile(r"\s*[^\W\d_]+(?:_[^\W_]+)+\W*")


def bare(text: str, field: str) -> Flaw | None:
    """``text`` is only words of :data:`_BARE`, or one name joined by underscores: Gemma 3
    270M wrote "all", "yes", "support," and "loves_to_dance" as intents, and "None",
    "not_yet", "No", "not clear" and "not applicable" as summaries, which became memories."""
    said = words(text)
    if not said or not (all(w in _BARE for w in said) or _KEY.fullmatch(text)):
        return None
    return Flaw("wordless", f"the {field} {text.strip()[:40]!r} is a bare value, not words")


#: An intent that is, all of it, keeping silent: "stay silent", "I will remain quiet and
#: listen", "say nothing", "not speak" (one that asks another to keep quiet is not).
_SILENCE = re.compile(
    r"(?:i\s+(?:will|want\s+to|would)\s+|i'll\s+|to\s+)?"
    r"(?:(?:stay|remain|keep|be)\s+(?:silent|quiet)(?:\s+(?:and|to)\s+(?:watch|listen|observe)\w*)?"
    r"|say\s+nothing|(?:not|don't|do\s+not)\s+speak)",
    re.IGNORECASE,
)


def keeps_silent(text: str) -> bool:
    """``text`` (an intent) says, all of it, that the agent keeps silent (Gemma 3 270M's
    Marco decided "stay silent" while speaking privately, urgency 10)."""
    return _SILENCE.fullmatch(text.strip().rstrip(".!")) is not None


#: What ends a phrase's opening clause: a bracket or a mark.
_CLAUSE_END = re.compile(r"[(.,;:\n]")


def described(text: str, description: str, field: str = "") -> Flaw | None:
    """``text`` (an intent or a summary) is copied from the schema's ``description``, whole
    or in its opening clause of two words or more (Gemma 3 270M went on after the copy:
    "one sentence (no others than the target)", "one sentence. target = all": 6 of the 41
    intents taken in the saved Gemma runs here), or opens with what the description says
    of its ``field`` (``intent: one sentence.``), two words or more: Gemma's Owen
    (discipline-policy) decided "one sentence in private (public only) or silent"."""
    told = runs(words(description), 2)
    for part in (text, _CLAUSE_END.split(text.strip(), maxsplit=1)[0]):
        pairs = runs(words(part), 2)
        if pairs and len(pairs & told) >= DESCRIPTION_SHARE * len(pairs):
            return Flaw(
                "description", f"{text.strip()[:60]!r} is the schema's description, not yours"
            )
    own = re.search(rf"(?i)\b{re.escape(field)}:\s*([^.\n]+)", description) if field else None
    told_own = words(own.group(1)) if own else []
    if len(told_own) >= 2 and words(text)[: len(told_own)] == told_own:
        return Flaw("description", f"{text.strip()[:60]!r} opens with the schema's description")
    return None


def phrase_flaw(text: str, field: str, description: str, names: Iterable[str] = ()) -> Flaw | None:
    """What is wrong with an intent or a summary (``field``): punctuation, debris, a bare
    value or only names (of ``names``, those present), or the schema's ``description``
    copied; an empty one is left out, not wrong."""
    if not text.strip():
        return None
    return (
        wordless(text, field)
        or bare(text, field)  # (before debris: "loves_to_dance" is a value, not code)
        or debris(text)
        or only_names(text, names, field)
        or scale_labels(text)
        or described(text, description, field)
    )
