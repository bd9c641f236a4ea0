"""Who a line speaks as: a line of names alone, a line in a script's form, a line that speaks
to, of or as its own speaker as another would ("Hello, Callum!" said by Callum), or that
gives its speaker another's name. Each is a :class:`~.quality.Flaw`."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .quality import Flaw, words


def only_names(text: str, names: Iterable[str], field: str = "utterance") -> Flaw | None:
    """``text`` says nothing but names of those present ("Leo", "Irene, Paul!"): Gemma 3
    270M's Nadia said "Leo" as her whole line, and its judges wrote "Paul" as a memory."""
    said = [w.removesuffix("'s") for w in words(text)]
    known = {w for name in names for w in words(name)}
    if not said or not all(w in known for w in said):
        return None
    return Flaw("wordless", f"the {field} {text.strip()[:40]!r} is only a name, not words")


def name_prefix(text: str, names: Iterable[str]) -> Flaw | None:
    """``text`` opens with a name of those present and a colon, as a script gives a line
    its speaker ("Jane: I'm afraid you have to wait.", Gemma 3 270M's Helen): its prompt
    said no name prefix. (The speaker's own name so is :func:`self_named`'s.)"""
    called = _any_of(names, cased=False)  # ("mei: …": a line's start is no sentence of words)
    if called is None:
        return None
    found = re.match(rf"\W*{called}\s*:(?!\d)", text)
    if found is None:
        return None
    return Flaw("debris", f"it opens with a name prefix ({found.group().strip()!r}), as a script")


#: Words that open a greeting or an address: "Hello, Callum!".
_GREETING = r"(?:hello|hi|hey|dear|greetings|welcome|thank you|thanks|good (?:morning|evening|day))"
#: A speaker saying its name: the name's first word (group 1; a number too: Gemma 3 270M's
#: Andrew, transfer-student, said "My name is 10, you are in my class."), where a name ends:
#: before a mark, "and" or the end ("My name is on the list" names nobody).
_MY_NAME = re.compile(
    r"\bmy name is\s+([^\W_][\w'-]*)(?:\s+[^\W\d_][\w'-]*)?(?=\s*(?:[.,!?;:]|$|and\b))",
    re.IGNORECASE,
)
#: A name with a title, as a role gives its agent one ("Ms. Okafor to her students").
_TITLED = re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr)\.?\s+[A-Z][\w'-]+")
#: Verbs that narrate a speaker: "Grace says her own words: …", "Thistle say what you …".
_NARRATES = (
    r"says?|said|speaks?|replies|replied|asks|asked|answers|answered|adds|whispers|tells|told"
)
#: Kin and friends a line may call someone: "my brother, Edmund".
_KIN = (
    r"(?:brother|sister|friend|son|daughter|father|mother|husband|wife|cousin|uncle|aunt"
    r"|nephew|niece|colleague|partner)"
)


def self_named(text: str, name: str, others: Iterable[str] = (), known: str = "") -> Flaw | None:
    """``text``, said by ``name``, calls the speaker by name to open a sentence ("Callum, …",
    "Hello, Callum!", "S.G. Greta: …") or to end one or a clause ("I agree with you, Sandra.",
    Joyce's "…what I told you, Joyce: 10."), greets the speaker, calls it its kin or friend ("my
    brother, Edmund"), tells it its name ("Your name is Diane"), narrates it at a line's or a
    sentence's start ("Grace says …") or before a colon ("The party's leader, Elowen, says: …")
    or speaks of it in the third person within a sentence ("the one that Thistle has seen" said
    by Thistle, "is Sophie's mother" by Sophie): the model spoke as someone else. Gemma 3 270M's
    Callum said "Hello, Callum!", its Edmund "I do this to my brother, Edmund", its Sandra "I
    agree with you, Sandra." and, "Ms. Okafor to her students", "Hello, Ms. Okafor!", its Grace
    "Grace says her own words: …" and its Diane "Your name is Diane". A name of several words
    counts whole, and by its first word (its last, after a title such as "Ms.") unless one of
    the ``others`` present shares that word; a titled name of its role (``known``) counts too.
    Or it gives the speaker another name (:func:`named_as_another`)."""
    parts = name.split()
    if not parts:
        return None
    called = {name, *_TITLED.findall(known)}  # (the names its role gives it: "Ms. Okafor")
    short = parts[-1] if parts[0].endswith(".") else parts[0]
    if not any(short in other.split() for other in others if other != name):
        called.add(short)
    names = _any_of(called)
    found = re.search(
        rf"^\W*{_any_of(called, cased=False)}\s*:(?!\d)"  # a script's prefix, "mei: …"
        rf"|(?:^|(?<=[.!?])\s)\W*(?:(?:{_GREETING}|oh|well|listen|look|yes|no)\W+)?{names}\s*[,!?:]"
        rf"|\b{_GREETING}[,\s]+{names}\b"
        rf"|,\s*{names}\s*[.!?:;]"
        rf"|(?:^|[.!?:]\s|\n)\W*{names}\s+(?:{_NARRATES})\b"
        rf"|\b{names}\s*,?\s+(?:{_NARRATES})\s*:"  # "The party's leader, Elowen, says: …"
        rf"|\b(?:my|our)\s+(?:dear\s+|own\s+)?{_KIN}\s*,?\s+{names}\b"
        rf"|\byour name is\s+{names}\b"
        rf"|(?-i:(?<=[a-z]\s)){names}(?:\s+(?:has|had|is|was|will|would|can|could|does|did)|'s)\b",
        text,
        re.IGNORECASE,
    )
    if found is not None:
        said = found.group().strip().lstrip(".!?:").strip()
        return Flaw("self", f"{said!r} speaks to or of you as another would, but you are {name}")
    return named_as_another(text, name, known, others)


def named_as_another(
    text: str, name: str, known: str = "", others: Iterable[str] = ()
) -> Flaw | None:
    """``text``, said by ``name``, gives the speaker another name ("my name is lili",
    Gemma 3 270M's Linda, a teacher, who went on "i'm a 4th grader"): a name that is a word
    neither of ``name`` nor of ``known`` (the speaker's role: "Ms. Osei to her
    students"); or says "I'm" or "I am" with the name of one of the ``others`` present
    (Gemma's Diane began "Hello, I'm Sofia.", Sofia's line to her)."""
    own = set(words(f"{name} {known}"))
    given = _MY_NAME.search(text)
    if given is not None and given.group(1).casefold() not in own:
        return Flaw("self", f"{given.group().strip()!r} names you as another, but you are {name}")
    called = _any_of(o for o in others if o != name)
    if called is None:
        return None
    found = re.search(rf"\bI(?:'m|’m|\s+am)\s+({called})(?=\s*(?:[.,!?;:]|$|and\b))", text, re.I)
    if found is None or set(words(found.group(1))) <= own:
        return None
    return Flaw("self", f"{found.group()!r} names you as another, but you are {name}")


def _any_of(names: Iterable[str], cased: bool = True) -> str | None:
    """A pattern of any of ``names`` (the longest first, matched case and all unless not
    ``cased``), None for none."""
    given = sorted({n for n in names if n}, key=len, reverse=True)
    return f"(?{'-' if cased else ''}i:" + "|".join(map(re.escape, given)) + ")" if given else None
