"""Points voiced by the one who says them: names and pronouns resolved against the speaker
(I, me, my) and the addressee (you, your), the verb after a new subject made to agree.
With a :class:`Cast` (the offline dynamics from version 5) the grammar goes further: a
subject's later verbs agree too ("... and am liable"), a narration's pronouns are the
speaker's only in the speaker's gender and when no one else named nearer has them, and an
object in a clause the speaker is the subject of is someone else ("had lunch with him")."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

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
#: ... and with a :class:`Cast`, these as well ("told her privately", "told her nothing").
_OBJECT_BEFORE = frozenset(
    """privately quietly secretly directly personally repeatedly yesterday today tonight
    below above behind beside across anything everything nothing something anyone everyone
    nobody someone somebody everybody anybody twice""".split()
)
_TOKEN = re.compile(r"[A-Za-z]+(?:'s)?|[^A-Za-z]+")
#: With a :class:`Cast`, a hyphenated word is one ("video-calls").
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*(?:'s)?|[^A-Za-z]+")
#: Words that open a clause of its own, where an object may be the clause's subject before.
_SUBORDINATE = frozenset("that if when because who which whether while until".split())
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
#: Verbs a subject's predicate goes on with after "and", "but" or "or" (with a
#: :class:`Cast`): "I co-signed the mortgage and is liable" is "... and am liable".
_VERBS = """accept add admit agree allow answer appear apply argue arrive ask avoid back
    become begin believe belong blame borrow break bring build burn buy call care carry catch
    cause change check choose claim climb close collect come complain consider continue cost
    count cover cry dance decide defend demand deny depend deserve design die doubt draw dread
    dream drink drive drop earn eat end enjoy expect explain face fail fall fear feel fight
    fill find finish fix follow forget forgive get give go grow guess hate hear help hide hold
    hope hurt ignore imagine insist intend join judge keep know lack laugh lead learn leave
    lend lie like listen live look lose love make manage mean meet mind miss move need notice
    offer open organise organize owe own pay pick plan play plead prefer prepare pretend
    promise protect prove pull push put quit reach read realise realize receive recognise
    recognize refuse regret rely remember repair repeat report rest return risk run save say
    see seek seem sell send serve share show sing sit skip sleep smile speak spend stand start
    stay steal stop struggle study suffer suggest support suspect swear take talk teach tell
    tend thank think threaten throw train travel treat trust try turn understand use visit
    vote wait wake walk want warn watch wear win wish wonder work worry write glance grin
    hand lean mutter nod order place point post propose rub shout shrug sigh slam snap stare
    storm sweep wave whisper""".split()


def _third(verb: str) -> str:
    """A verb's third-person present form."""
    if verb in ("have", "do", "go"):
        return {"have": "has", "do": "does", "go": "goes"}[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_THIRD = frozenset(map(_third, _VERBS)) | _VERB_AFTER | {"cannot"}


@dataclass(frozen=True, eq=False)
class Cast:
    """Each persona's narrated gender: the pronoun set (``he``, ``him``, ... or ``she``,
    ``her``, ...) its private information narrates it with, where it does."""

    pronouns: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, narrations: Iterable[tuple[str, Iterable[str]]]) -> Cast:
        """From each persona's name and the texts that narrate it."""
        found = {name: narrated_as(name, texts) for name, texts in narrations}
        return cls({name: g for name, g in found.items() if g is not None})


def narrated_as(name: str, texts: Iterable[str]) -> frozenset[str] | None:
    """The pronoun set that narrates ``name`` in ``texts``: the pronouns a sentence uses
    before it names anyone else, by majority (None when none or tied)."""
    he = she = 0
    for text in texts:
        for sentence in re.split(r"[.;!?]", text):
            words = re.findall(r"[A-Za-z]+(?:'s)?", sentence)
            for k, word in enumerate(words):
                low = word.lower()
                if word[0].isupper() and word.removesuffix("'s") not in (name, "I"):
                    after = words[k + 1].lower() if k + 1 < len(words) else ""
                    if (k or word.endswith("'s") or after in _THIRD or after.endswith("ed")) and (
                        low not in _HE | _SHE | _COMMON
                    ):
                        break  # someone else named: the pronouns after may be theirs
                he += low in _HE
                she += low in _SHE
    return _HE if he > she else _SHE if she > he else None


def voiced(
    text: str,
    speaker: str,
    addressee: str | None = None,
    *,
    about_speaker: bool = False,
    strict: bool = False,
    cast: Cast | None = None,
) -> str:
    """``text`` as ``speaker`` says it to ``addressee``: their names become I/me/my and
    you/your, and the pronouns that follow a name so replaced (in its sentence) follow it.
    ``about_speaker``: the text narrates the speaker (a persona's private information), so
    its third-person pronouns of the first gender used are the speaker's own throughout.
    ``strict``: "her" before a pronoun is an object ("told me he would", not "told my he").
    ``cast``: the personas' genders, for the fuller grammar (the module's summary)."""
    if not about_speaker and speaker not in text and (not addressee or addressee not in text):
        return text  # nobody to resolve: every token stays as it is
    return _resolved(text, speaker, addressee, about_speaker, strict, cast)


@lru_cache(maxsize=1 << 14)
def _resolved(
    text: str,
    speaker: str,
    addressee: str | None,
    about_speaker: bool,
    strict: bool = False,
    cast: Cast | None = None,
) -> str:
    """:func:`voiced` of a text that names the speaker or the addressee, or narrates the
    speaker; kept for the last 16,384 (an agent voices its points round after round)."""
    people = {speaker: 1, **({addressee: 2} if addressee and addressee != speaker else {})}
    narrator = 1 if about_speaker else 0
    tokens = (_WORD if cast else _TOKEN).findall(text)
    out: list[str] = []
    person = narrator  # whom third-person pronouns now refer to (0: nobody resolved)
    own = cast.pronouns.get(speaker) if cast and narrator else None
    follows: frozenset[str] = own or _HE | _SHE  # the pronouns that refer to that person
    conjugate = 0  # the person whose verb comes next
    predicate = 0  # the person whose predicate goes on after "and" (with a cast)
    nearer: frozenset[str] | None = None  # someone else named since (with a cast, narrated)
    named = 0  # (the token that named them)
    mine = False  # in a clause the narrated speaker is the subject of (with a cast)
    start = True  # at a sentence's start
    for k, tok in enumerate(tokens):
        if not tok[0].isalpha():
            if any(c in tok for c in ".;!?"):
                start, conjugate, predicate, nearer, mine = True, 0, 0, None, False
                if not narrator:
                    person, follows = 0, _HE | _SHE
            out.append(tok)
            continue
        low = tok.lower()
        base = tok[:-2] if tok.endswith("'s") else tok
        if mine and _clause_opens(tokens, k, low, follows):
            mine = False
        if base in people:
            who = people[base]
            subject, obj, possessive, _ = _FORMS[who]
            if tok.endswith("'s"):
                out.append(_capital(possessive, cast is not None and _opens(out)))
            elif start or _subject_position(tokens, k) or (strict and _verb_next(tokens, k, cast)):
                out.append(subject)
                conjugate = predicate = who
                mine = bool(cast and narrator)
            else:
                out.append(obj)
            person, nearer = narrator or who, None
        elif nearer is not None and low in nearer and _refers_back(tokens, named, k, nearer):
            out.append(tok)  # the pronoun of the one named nearer, whose gender it is now
            nearer, conjugate = _HE if low in _HE else _SHE, 0
        elif mine and low in follows and _pronoun(low, tokens, k, 1, strict, True) == "me":
            out.append(tok)  # an object in the speaker's own clause is someone else
        elif person and low in follows:
            if narrator and len(follows) > len(_HE):  # the narration's gender, once seen
                follows = _HE if low in _HE else _SHE
            said = _pronoun(low, tokens, k, person, strict, cast is not None)
            out.append(_capital(said, cast is not None and _opens(out)))
            conjugate = person if low in _SUBJECT else 0
            predicate = conjugate or predicate
            mine = mine or bool(cast and narrator and conjugate)
        elif conjugate:
            if _ADVERB.match(low):
                out.append(tok)
                start = False
                continue
            out.append(_agree(tok, conjugate))
            conjugate = 0
        elif cast and predicate and low in ("and", "but", "or") and _verb_ahead(tokens, k):
            out.append(tok)
            conjugate = predicate
        else:
            if low in ("and", "but") and out and out[-1].rstrip().endswith(","):
                nearer = None  # a clause of the narration's own: "..., and she believes it"
            if cast and narrator and _named(tokens, k, start):
                nearer, named = cast.pronouns.get(base, _HE | _SHE), k
            out.append(tok)
        start = False
    return "".join(out)


def _capital(word: str, capital: bool) -> str:
    return word[:1].upper() + word[1:] if capital else word


def _opens(out: list[str]) -> bool:
    """Whether a word after ``out`` opens a sentence that is not the text's first."""
    return bool(out) and out[-1].rstrip().endswith((".", "!", "?"))


def _named(tokens: list[str], k: int, start: bool) -> bool:
    """Whether the word at ``k`` names someone else as a subject: a capitalized name (not a
    possessive) before a verb."""
    tok = tokens[k]
    if not tok[0].isupper() or tok.endswith("'s") or tok == "I":
        return False
    after = _word_after(tokens, k)
    if start and tok.lower() in _COMMON:
        return False
    return after in _THIRD or after.endswith("ed")


def _refers_back(tokens: list[str], named: int, k: int, pronouns: frozenset[str]) -> bool:
    """Whether the pronoun at ``k`` can refer to the one named at ``named`` (its pronouns
    ``pronouns``, both sets while its gender is unknown): a subject can; an object only
    in a clause of its own ("Tessa told him": him is not Tessa); a possessive once the
    gender is known (the one named may be a company)."""
    low = tokens[k].lower()
    if low in _SUBJECT or low in _REFLEXIVE:
        return True
    if low in _OBJECT or (low == "her" and _pronoun(low, tokens, k, 1, True, True) == "me"):
        return any(t.lower() in _SUBORDINATE for t in tokens[named + 1 : k])
    return len(pronouns) < len(_HE | _SHE)


#: Words that open a clause of its own, after which an object may be the speaker again.
_OPENS = _SUBORDINATE | frozenset("because after before since so although unless what".split())
_BASE = frozenset(_VERBS) | {"be", "have", "do"}


def _clause_opens(tokens: list[str], k: int, low: str, speaker: frozenset[str]) -> bool:
    """Whether the word at ``k`` opens a clause of someone else, or one that may name the
    speaker as an object (after "that", "to", a participle, another subject)."""
    if low in _OPENS or low.endswith("ing") or low in ("it", "they", "we", "you"):
        return True
    if low in _SUBJECT:  # another's subject ("he wanted her to have it", said by Nell)
        return low not in speaker
    if low in ("and", "but", "or", "not"):
        return False
    after = _word_after(tokens, k)
    if low == "to":  # an infinitive's, not a place's ("told her to keep", "went to school")
        return after in _BASE
    return after in _THIRD and not _ADVERB.match(low)


def _subject_position(tokens: list[str], k: int) -> bool:
    """Whether the name at ``k`` opens a clause (after a comma, "and", "while", ...)."""
    before = "".join(tokens[max(0, k - 2) : k]).strip().lower()
    return before.endswith((",", "while", "because", "but", "and", "that", "if", "so"))


def _verb_next(tokens: list[str], k: int, cast: Cast | None = None) -> bool:
    """Whether the word after the name at ``k`` is a verb it is the subject of (with a
    cast, any verb of :data:`_VERBS` too, past adverbs: "Lily still sleeps")."""
    after = _word_after(tokens, k, past_adverbs=cast is not None)
    return after in _VERB_AFTER or (cast is not None and after in _THIRD)


def _verb_ahead(tokens: list[str], k: int) -> bool:
    """Whether a third-person verb follows the conjunction at ``k`` (past adverbs)."""
    return _word_after(tokens, k, past_adverbs=True).rpartition("-")[2] in _THIRD


def _pronoun(low: str, tokens: list[str], k: int, person: int, strict: bool, cast: bool) -> str:
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
    after = _word_after(tokens, k)
    owned = after[:1].isalpha() and after not in _NOT_OWNED
    if (strict and after in _PRONOUN_AFTER) or (cast and after in _OBJECT_BEFORE):
        owned = False
    return own if owned else obj


def _word_after(tokens: list[str], k: int, past_adverbs: bool = False) -> str:
    """The token after ``k`` that is not a space (a word or its punctuation), lower case;
    past adverbs too if asked ("" at the end)."""
    for tok in islice(tokens, k + 1, None):
        low = tok.lower()
        if tok.strip() and not (past_adverbs and _ADVERB.match(low)):
            return low
    return ""


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
