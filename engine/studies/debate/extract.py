"""The option letter a free-text debate response settles on (Relational priors App. B.1)."""

from __future__ import annotations

import re

from .questions import LETTERS

_SEP = r"[\s*_`\"'(\[{:=\-–—]*"
_CUE = (
    r"(?i:\banswer\b|\b(?:correct|right|best|final)\s+(?:option|choice)\b"
    r"|\bmy\s+(?:choice|pick|vote)\b"
    r"|\b(?:choose|pick|select|go\s+with|vote\s+for|stick\s+with|settle\s+on)\b)"
)
_VERB = (
    r"(?i:(?:is|was|remains|stays|becomes|would\s+be|should\s+be|must\s+be|will\s+be)\b"
    + _SEP
    + r")?"
)
_ADVERB = r"(?i:(?:therefore|thus|still|clearly|definitely|now|indeed|probably|likely)\b,?\s*)?"
_HEDGE = r"(?i:I\s+(?:think|believe)\s+(?:it(?:'s|\s+is)\s+)?)?"
_OPTION = r"(?i:(?:option|choice)\b" + _SEP + r")?"
_LETTER = r"(?:\(([A-Za-z])\)|([A-Z])(?![A-Za-z0-9]))"
_CUED = re.compile(_CUE + _SEP + _VERB + _ADVERB + _HEDGE + _OPTION + _LETTER)
_BOXED = re.compile(r"\\boxed\{\s*(?:\\text\{)?\s*\(?([A-Za-z])\)?\s*\}")
_LEADING = re.compile(r"^\s*[*_(\[]*([A-Z])(?:[)\].:*]|\s*$)")
_LONE = re.compile(r"^\s*[*_(\[]*([A-Za-z])[)\]*_]*\.?\s*$")
_BRACKETED = re.compile(r"[(\[]([A-Z])[)\]]")
_PRONOUN_I = re.compile(r"\s+[a-z]")


def extract_answer(text: str, n_options: int) -> str | None:
    """The option letter a response settles on, or None when it names none (App. B.1 Extract).

    In order: the last explicit cue ("Answer: C", "the answer is (C)", ``"answer": "C"``,
    "I choose C", "the correct option is C", ``\\boxed{C}``); a leading letter ("C) 42",
    "(C)", "C."); a single distinct bracketed letter anywhere ("... so (C)."); a lone
    letter. Letters beyond ``n_options`` never count; "Answer: I think ..." is not option I.
    """
    if not text or n_options < 1:
        return None
    valid = LETTERS[: min(n_options, len(LETTERS))]
    found: list[tuple[int, str]] = []
    for m in _CUED.finditer(text):
        letter = m.group(1) or m.group(2)
        if m.group(2) == "I" and _PRONOUN_I.match(text, m.end()):
            continue  # "Answer: I think it is B" -- the pronoun, not option I
        found.append((m.start(), letter.upper()))
    found += [(m.start(), m.group(1).upper()) for m in _BOXED.finditer(text)]
    cued = [letter for _, letter in sorted(found) if letter in valid]
    if cued:
        return cued[-1]
    lead = _LEADING.match(text) or _LONE.match(text)
    if lead and lead.group(1).upper() in valid:
        return lead.group(1).upper()
    bracketed = {m.group(1) for m in _BRACKETED.finditer(text)} & set(valid)
    if len(bracketed) == 1:
        return bracketed.pop()
    return None
