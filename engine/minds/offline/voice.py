"""Points voiced by the one who says them: names and pronouns resolved against the speaker
(I, me, my) and the addressee (you, your), the verb after a new subject made to agree."""

from __future__ import annotations

import re
from functools import lru_cache

#: Words after which "her" is an object ("told her so"), not a possessive ("her share").
_NOT_OWNED = frozenset(
    """to and or the a an that this about with for in on at from of by as than if when so but
    up out off over down back into again too now""".split()
)
#: Verbs that make the name before them a subject ("knows Ada wants" is "knows you want").
_VERB_AFTER = frozenset(
    """has is was does did had will would can could should must may might wants says thinks
    knows needs likes hopes believes feels keeps takes gets goes makes""".split()
)
#: Words that, after "her", make it an object too ("told her he would", "like her will");
#: read only when voicing is ``strict`` (the offline dynamics from version 2: older runs
#: said "my he"), as is :data:`_VERB_AFTER`.
_PRONOUN_AFTER = frozenset("i you he she it we they me him us them".split()) | _VERB_AFTER
_TOKEN = re.compile(r"[A-Za-z]+(?:'s)?|[^A-Za-z]+")
_SUBJECT = {"he", "she"}
_OBJECT = {"him"}
_POSSESSIVE = {"his"}
_REFLEXIVE = {"himself", "herself"}
_HE = frozenset({"he", "him", "his", "himself"})
_SHE = frozenset({"she", "her", "herself"})
#: Person -> (subject, object, possessive, reflexive).
_FORMS = {1: ("I", "me", "my", "myself"), 2: ("you", "you", "your", "yourself")}
_IRREGULAR = {
    1: {"has": "have", "is": "am", "was": "was", "does": "do"},
    2: {"has": "have", "is": "are", "was": "were", "does": "do"},
}
#: Words between a subject and its verb that are not the verb.
_ADVERB = re.compile(r"[a-z]+ly$|always$|also$|just$|still$|never$|often$|already$|even$|only$")


def voiced(
    text: str,
    speaker: str,
    addressee: str | None = None,
    *,
    about_speaker: bool = False,
    strict: bool = False,
) -> str:
    """``text`` as ``speaker`` says it to ``addressee``: their names become I/me/my and
    you/your, and the pronouns that follow a name so replaced (in its sentence) follow it.
    ``about_speaker``: the text narrates the speaker (a persona's private information), so
    its third-person pronouns of the first gender used are the speaker's own throughout.
    ``strict``: "her" before a pronoun is an object ("told me he would", not "told my he")."""
    if not about_speaker and speaker not in text and (not addressee or addressee not in text):
        return text  # nobody to resolve: every token stays as it is
    return _resolved(text, speaker, addressee, about_speaker, strict)


@lru_cache(maxsize=1 << 14)
def _resolved(
    text: str, speaker: str, addressee: str | None, about_speaker: bool, strict: bool = False
) -> str:
    """:func:`voiced` of a text that names the speaker or the addressee, or narrates the
    speaker; kept for the last 16,384 (an agent voices its points round after round)."""
    people = {speaker: 1, **({addressee: 2} if addressee and addressee != speaker else {})}
    narrator = 1 if about_speaker else 0
    tokens = _TOKEN.findall(text)
    out: list[str] = []
    person = narrator  # whom third-person pronouns now refer to (0: nobody resolved)
    follows: frozenset[str] = _HE | _SHE  # the pronouns that refer to that person
    conjugate = 0  # the person whose verb comes next
    start = True  # at a sentence's start
    for k, tok in enumerate(tokens):
        if not tok[0].isalpha():
            if any(c in tok for c in ".;!?"):
                start, conjugate = True, 0
                if not narrator:
                    person, follows = 0, _HE | _SHE
            out.append(tok)
            continue
        low = tok.lower()
        base = tok[:-2] if tok.endswith("'s") else tok
        if base in people:
            who = people[base]
            subject, obj, own, _ = _FORMS[who]
            if tok.endswith("'s"):
                out.append(own)
            elif start or _subject_position(tokens, k) or (strict and _verb_next(tokens, k)):
                out.append(subject)
                conjugate = who
            else:
                out.append(obj)
            person = narrator or who
        elif person and low in follows:
            if narrator and len(follows) > len(_HE):  # the narration's gender, once seen
                follows = _HE if low in _HE else _SHE
            out.append(_pronoun(low, tokens, k, person, strict))
            conjugate = person if low in _SUBJECT else 0
        elif conjugate:
            if _ADVERB.match(low):
                out.append(tok)
                start = False
                continue
            out.append(_agree(tok, conjugate))
            conjugate = 0
        else:
            out.append(tok)
        start = False
    return "".join(out)


def _subject_position(tokens: list[str], k: int) -> bool:
    """Whether the name at ``k`` opens a clause (after a comma, "and", "while", ...)."""
    before = "".join(tokens[max(0, k - 2) : k]).strip().lower()
    return before.endswith((",", "while", "because", "but", "and", "that", "if", "so"))


def _verb_next(tokens: list[str], k: int) -> bool:
    """Whether the word after the name at ``k`` is a verb it is the subject of."""
    after = next((t for t in tokens[k + 1 :] if t.strip()), "")
    return after.lower() in _VERB_AFTER


def _pronoun(low: str, tokens: list[str], k: int, person: int, strict: bool) -> str:
    """A third-person pronoun as the resolved person says it."""
    subject, obj, own, reflexive = _FORMS[person]
    if low in _SUBJECT:
        return subject
    if low in _OBJECT:
        return obj
    if low in _POSSESSIVE:
        return own
    if low in _REFLEXIVE:
        return reflexive
    after = next((t for t in tokens[k + 1 :] if t.strip()), "")
    owned = after[:1].isalpha() and after.lower() not in _NOT_OWNED
    if strict and after.lower() in _PRONOUN_AFTER:
        owned = False
    return own if owned else obj


def _agree(verb: str, person: int) -> str:
    """A present-tense third-person verb made to agree with I or you."""
    low = verb.lower()
    if low in _IRREGULAR[person]:
        return _IRREGULAR[person][low]
    if low.endswith("ies") and len(low) > 4:
        return verb[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes", "oes")):
        return verb[:-2]
    if low.endswith("s") and not low.endswith(("ss", "us", "is", "'s")) and len(low) > 3:
        return verb[:-1]
    return verb


#: Opening words a point loses its capital with when set inside a sentence.
_COMMON = frozenset(
    """a an the this that these those my your his her our their its it there we they he she
    you someone nobody everyone one some most all no if when""".split()
)


def inside(text: str) -> str:
    """``text`` set inside a sentence: a common opening word loses its capital (names and
    "I" keep theirs)."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in _COMMON else text
