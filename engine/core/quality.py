"""Whether a model's utterance means something: every check of a line's quality.

A reply can fit its schema and still say nothing: an empty utterance, JSON or template debris,
an echo of the prompt's instructions, one sentence said over and over, a sentence cut off
mid-way, a copy of another agent's line (this round or one remembered, in any person) or of
one of the speaker's own lines of the rounds it remembers. Such a reply is *degenerate*
(:class:`Flaw`): the LLM client asks again once with the flaw's note, then falls back, and
records both as outcome ``degenerate``. Who a line speaks as is :mod:`.naming`'s; an
intent's and a summary's checks are :mod:`.phrases`'; how well a model played, over a run,
is :mod:`.tally`'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

#: An utterance sharing a run of this many words with its prompt's instructions echoes them.
#: A real echo of Gemma 3 270M ("… don't speak privately to Edmund (neutral) and your intent:
#: one sentence. Say it now.") shares five ("speak privately to Edmund neutral").
ECHO_WORDS = 5
#: An utterance saying a sentence of its instructions of this many words or more, whole, as
#: a sentence of its own echoes them: Gemma 3 270M's Jade (friendship) ended her line with
#: the speech prompt's last sentence, "…(and you are).⏎Say it now."
ECHO_SENTENCE_WORDS = 3
#: An utterance sharing a run of this many words with its system text (the scenario's
#: description, the persona) recites it: a character may use a phrase of the scenario, not
#: a dozen of its words in a row. Gemma 3 270M on llama-server spoke "Scenario: Tavern
#: inheritance dispute. Bram Holloway ran The Crooked Lantern, …" as its words.
RECITE_WORDS = 12
#: An utterance saying one sentence of at least LOOP_WORDS words LOOP_TIMES times or more
#: is stuck in a loop: Gemma 3 270M on a real server said "You were in a relationship with
#: a man who did not know you and could not talk to you." four times in one turn.
LOOP_WORDS, LOOP_TIMES = 3, 3
#: A sentence of this many words or more said twice in one line is a loop too: Gemma 3
#: 270M's George (school-event) said "I'm going to ask you, please do it now." twice over.
TWICE_WORDS = 7
#: A line copied verbatim (another agent's, or one of the speaker's own) counts from this
#: many words: two agents may both say "I agree with you."
COPY_WORDS = 5
#: A line holding another's whole line of at least this many words copies it, and so does a
#: line of at least this many words that another's holds whole: Gemma 3 270M's Callum said
#: "I will keep the place open until when I die!", the last sentence of Nell's line, and in
#: the gossip scenario its Martin "I've seen this from the other side.", the first sentence
#: of what Tessa had just told him (7 words).
CONTAINED_WORDS = 7
#: A line of :data:`CONTAINED_WORDS` words or more whose words lie, this share of them or
#: more, in runs of :data:`COPY_WORDS` words that others said, copies them (:func:`others_words`).
COVERED_SHARE = 0.8
#: A line sharing a run of this many words in a row with another's copies it too: Gemma 3
#: 270M's Silas and Greta said 27 words of Nell's line ("…so that no one else can use it as a
#: shop or restaurant, then sell at your brother's expense…"), each with a new beginning.
SHARED_RUN_WORDS = 12
#: Text whose letters are under this share of its visible characters is punctuation
#: (``": 0, "``, ``'>0.50, '``).
LETTER_SHARE = 0.5
#: JSON's ``null``, not a word: Gemma 3 270M on llama-cpp-python wrote a relation's summary
#: as ``": null, "``.
_NULL = re.compile(r"\bnull\b", re.IGNORECASE)

#: JSON structure a spoken line never holds (``}, ``, ``:[``, ``"say":``, ``"}, {"``, a colon
#: opening it: Gemma 3 270M's Diane said ``":\n  the wordDiane: Diane says"``), chat template
#: tokens (``<end_of_turn>``, ``<|im_end|>``, ``</s>``) and a code name of three words or more
#: (its Elowen, quest: ``Elowen_says_then_said_again_now_in_character.html``).
_DEBRIS = re.compile(
    r"[{}]"
    r"|^\s*:(?![-()DPp])"
    r"|[,:]\s*\["
    r"|\[\s*[\[\]{\"]"
    r"|\]\s*[,:\]}]"
    r'|"\s*:\s*["\d\[{-]'
    r'|"\s*,\s*"'
    r"|<\|?/?[a-z_]+\|?>"
    r"|\b[^\W_]+(?:_[^\W_]+){2,}"
    r"|\b(?:END SCHEMA|JSON schema)\b",
    re.IGNORECASE,
)
#: A scale's labels, two of them ("1 = very negative, 2 = neutral"): Gemma 3 270M's Nadia
#: went on so from her prompt's "S = 0.40 (0 = very negative, 0.5 = neutral, …)".
_SCALE = re.compile(r"\b\d+(?:\.\d+)?\s*=\s*[^\W\d_][^=]*?\b\d+(?:\.\d+)?\s*=\s*[^\W\d_]")
#: A prompt's label opening a line of a reply ("\naudience: the target.\n\nPhase 2: decide"):
#: Gemma 3 270M went on into template text so.
_LABEL = re.compile(r"\n\s*(?:Phase \d+|[a-z_]+):")
#: The labels of an agent's own prompt opening a line of its reply ("Scenario: Harrowgate
#: Tavern. Traits: - Tim, …"): Gemma 3 270M on llama-server spoke in its prompt's form, and
#: its Carmen (materialism, in the app) said "What you have seen: Nothing has happened yet.".
_PROMPT_LABEL = re.compile(
    r"(?:^|\n)\s*(?:Scenario|Traits|Style \(\w+\)|Others present|What only you know"
    r"|Points you care about|What you have seen|Said so far this round):"
    r"|\bTraits: -"
)
#: A line of a reply that is a list's marker alone, an item with nothing in it: Gemma 3 270M's
#: Daniel (class-election) said "What I have done today is to say: 1.⏎2.⏎3.".
_EMPTY_ITEM = re.compile(r"(?m)^[ \t]*(?:\d{1,2}[.)]|[-*•])[ \t]*$")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_SENTENCE_END = re.compile(r"[.!?;\n]+")
#: A sentence: what lies between two of :data:`_SENTENCE_END`.
_SENTENCE = re.compile(r"[^.!?;\n]+")
_LETTERS = re.compile(r"[^\W\d_]")
_SPELLED = re.compile(r"[^\W\d_]{2,}")


@dataclass(frozen=True)
class Flaw:
    """Why a reply that fits its schema does not count: its kind (a key of
    :data:`~.exchanges.FLAWS`) and one line saying what was wrong (recorded, and sent back
    with the re-ask); ``mended``, where the flawed part can be left out (an optional field,
    a sentence cut off after whole ones), the reply without it, which the re-ask's reply,
    flawed again, is taken as (recorded as repaired, with ``mending`` saying what was left
    out) rather than falling back. ``cut``: for an echo of the instructions' sentence at
    the end of a line, where that sentence begins (the line before it may be mended to);
    ``start``: for words announcing the line before it ("I have decided to say, as you
    wish: the following: …"), where the line they announce begins (it may be mended to)."""

    kind: str
    note: str
    mended: object = None
    mending: str = ""
    cut: int | None = None
    start: int | None = None


def words(text: str) -> list[str]:
    """The words of ``text``, case-folded, without punctuation."""
    return _WORD.findall(text.casefold())


def debris(text: str) -> Flaw | None:
    """JSON, chat-template or code debris in ``text``, or a list's empty item."""
    found = _DEBRIS.search(text) or _LABEL.search(text) or _PROMPT_LABEL.search(text)
    if found is not None:
        return Flaw("debris", f"it holds JSON, template or code debris ({found.group()!r})")
    item = _EMPTY_ITEM.search(text)
    if item is not None:
        return Flaw(
            "debris", f"it holds a list's item with nothing in it ({item.group().strip()!r})"
        )
    return None


def wordless(text: str, field: str) -> Flaw | None:
    """``text`` is punctuation, numbers or JSON's ``null``, or garbled, not words."""
    visible = [c for c in text if not c.isspace()]
    spelled = _NULL.sub("", text)
    letters = len(_LETTERS.findall(spelled))
    spoken = _SPELLED.search(spelled) and letters >= LETTER_SHARE * len(visible)
    if spoken and not garbled(spelled):
        return None
    return Flaw("wordless", f"the {field} {text.strip()[:40]!r} is not words")


def scale_labels(text: str) -> Flaw | None:
    """``text`` lists a scale's labels, as a prompt states a scale, not as anyone speaks."""
    found = _SCALE.search(text)
    if found is None:
        return None
    return Flaw("debris", f"it lists a scale's labels ({found.group()!r}), not words")


def garbled(text: str) -> bool:
    """Whether ``text``'s words that mix letters with digits or signs (``L4xGqE³e³Y2lU``)
    hold more of its characters than its plain words: Gemma 3 270M's Edmund said 600
    characters so. Letters alone count as a word at any length (a script without spaces
    runs its words together); numbers count as neither."""
    mixed = plain = 0
    for token in _WORD.findall(text):
        core = token.replace("'", "")
        if core.isalpha():
            plain += len(core)
        elif any(c.isalpha() for c in core):
            mixed += len(core)
    return mixed > plain


def runs(items: Sequence[str], n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` items in a row of ``items``."""
    return {tuple(items[i : i + n]) for i in range(len(items) - n + 1)}


def echo(text: str, instructions: str) -> Flaw | None:
    """``text`` repeats a run of :data:`ECHO_WORDS` words of the prompt's ``instructions``,
    or says one of their sentences of :data:`ECHO_SENTENCE_WORDS` words or more as a
    sentence of its own."""
    shared = runs(words(text), ECHO_WORDS) & runs(words(instructions), ECHO_WORDS)
    cut = None
    if not shared:
        shared, cut = _sentences_echoed(text, instructions)
    if not shared:
        return _terms_echoed(text, instructions) or _task_told(text)
    run = " ".join(min(shared))
    return Flaw("echo", f"it repeats the instructions ({run!r}) instead of speaking", cut=cut)


#: Words of a prompt's rules that nobody says in a scene: a line holding one that its
#: instructions hold too speaks of them (Gemma 3 270M's Eli ended his line with "the name
#: prefix was not necessary, and the quote is not needed"; its Tessa, solar-farm, "I want to
#: vote for Tessa, but I don't see the land.⏎say it now, in character.": "in character" is in
#: 11 of the 408 speech replies of the saved Gemma runs, every one of them an echo).
_PROMPT_TERMS = re.compile(r"(?i)\b(?:name prefix|stage direction|in character\b)")
#: The speech field's description ("say: the words Elena says aloud now, in character."),
#: and a line telling it back: Gemma 3 270M's Elena (friendship) said "She says the words I
#: said, in my own way.".
_FIELD = re.compile(r"(?i)\bthe words .+? says aloud\b")
_FIELD_TOLD = re.compile(r"(?i)\bsays\s+the\s+words\b")


def _terms_echoed(text: str, instructions: str) -> Flaw | None:
    """The first of :data:`_PROMPT_TERMS` ``text`` and its ``instructions`` both hold, or
    the speech field's description told back (:data:`_FIELD_TOLD`), as an echo; cut where
    it begins when only ``text``'s last sentence holds any."""
    told = {t.lower() for t in _PROMPT_TERMS.findall(instructions)}
    found = [m for m in _PROMPT_TERMS.finditer(text) if m.group().lower() in told]
    if _FIELD.search(instructions):
        found = sorted([*found, *_FIELD_TOLD.finditer(text)], key=lambda m: m.start())
    if not found:
        return None
    last = _start([m for m in _SENTENCE.finditer(text) if words(m.group())][-1])
    cut = last if found[0].start() >= last else None
    term = found[0].group().lower()
    return Flaw("echo", f"it speaks of its instructions ({term!r}) instead of speaking", cut=cut)


#: Whom a task told back names, between "to speak" and how: "to you", "with Marcus", "to Mr.
#: Price" (Gemma 3 270M's Emma, discipline-policy: "I have decided to speak to you privately
#: today.").
_TITLE = r"(?:mr|mrs|ms|dr)\."
_TO = rf"(?:\s+(?:to|with)\s+(?:the\s+|{_TITLE}\s*)?(?!{_TITLE})[^\W\d_][\w'-]*)?"

#: A sentence that tells the speaker its own task, as the speech prompt does ("You decided
#: to speak publicly to everyone"), or tells it back in the first person with the prompt's
#: words for the mode, or announces what it will say: Gemma 3 270M's Mei began her line "You
#: decide to speak in front of everyone.", its Elena "I decided to speak privately with
#: Sandra about my feelings", its Helena (hospital) "I have decided to speak in person, this
#: time.", its Brooke (gossip) "I chose to speak in private, so I'm going to say it now.",
#: its Nell (tavern) "I have decided to say, as you wish: the following: …" (group
#: ``announces``), its Ethan (helicopter-parent) "I decided to speak" and no more (its
#: Paula, school-event: "I decided to speak today.").
_TASK = re.compile(
    r"(?i)(?:you\s+(?:have\s+)?(?:decided?|chose|choose)\s+to\s+speak\b"
    r"|i(?:\s+have|'ve)?\s+(?:decided?|chose|choose)\s+to\s+(?:speak" + _TO + r"\s+(?:publicly"
    r"|privately|aloud|in\s+(?:public|private|person))\b"
    r"|speak" + _TO + r"(?:\s+(?:today|now|here|first|again|tonight|this\s+time))?"
    r"\s*(?:[.!?…;\n]|$)"
    r"|(?P<announces>say\s*[,:]|say\s+the\s+following\b)))"
)
#: The fewest words of a line that words announcing it leave to be said (:attr:`Flaw.start`).
ANNOUNCED_WORDS = 3


def _task_told(text: str) -> Flaw | None:
    """A sentence of ``text`` that opens with :data:`_TASK`, as an echo; cut where it begins
    when it is ``text``'s last sentence; when it is the first, the line it announces after
    its last colon (:attr:`Flaw.start`)."""
    sentences = [m for m in _SENTENCE.finditer(text) if words(m.group())]
    told = [(m, task) for m in sentences if (task := _TASK.match(text, _start(m)))]
    if not told:
        return None
    (first, task), one = told[0], len(told) == 1
    cut = _start(first) if one and first is sentences[-1] else None
    colon = text.rfind(":", first.start(), first.end())
    start = colon + 1 if one and first is sentences[0] and colon >= 0 else None
    if task.group("announces"):
        note = "it announces its words ('I have decided to say') instead of saying them"
    else:
        note = "it tells itself its task ('you decided to speak') instead of speaking"
    return Flaw("echo", note, cut=cut, start=start)


def _sentences_echoed(text: str, instructions: str) -> tuple[set[tuple[str, ...]], int | None]:
    """The sentences of ``instructions`` (of :data:`ECHO_SENTENCE_WORDS` words or more)
    that ``text`` says whole (or, all of it, with a subject of :data:`_SUBJECTS` before),
    and where the echo begins when it is ``text``'s last sentence alone (None otherwise)."""
    told = {
        sentence
        for s in _SENTENCE_END.split(instructions)
        if len(sentence := tuple(words(s))) >= ECHO_SENTENCE_WORDS
    }
    said = [(_start(m), w) for m in _SENTENCE.finditer(text) if (w := tuple(words(m.group())))]
    if len(said) == 1 and _unsubjected(said[0][1]) in told:  # told back as one's own
        return {_unsubjected(said[0][1])}, None
    echoed = [(start, w) for start, w in said if w in told]
    cut = echoed[0][0] if len(echoed) == 1 and echoed[0] == said[-1] else None
    return {w for _, w in echoed}, cut


#: A speaker's own words opening a sentence of its instructions, a line that is only that
#: sentence telling its task back (Gemma 3 270M's Mei, helicopter-parent, asked again, said
#: "I say it now"), the longest first.
_SUBJECTS: tuple[tuple[str, ...], ...] = (
    ("i", "am", "going", "to"),
    ("i'm", "going", "to"),
    ("i", "will"),
    ("i'll",),
    ("now", "i"),
    ("so", "i"),
    ("let", "me"),
    ("i",),
)


def _unsubjected(sentence: tuple[str, ...]) -> tuple[str, ...]:
    """``sentence``'s words without a subject of :data:`_SUBJECTS` opening it."""
    for subject in _SUBJECTS:
        if sentence[: len(subject)] == subject:
            return sentence[len(subject) :]
    return sentence


def _start(sentence: re.Match[str]) -> int:
    """Where a :data:`_SENTENCE` match's first word begins (past the spaces after the stop
    before it: what precedes it then ends on that stop and a space, a whole sentence)."""
    return sentence.start() + len(sentence.group()) - len(sentence.group().lstrip())


def recited(text: str, told: str) -> Flaw | None:
    """``text`` repeats a run of :data:`RECITE_WORDS` words of what its prompt ``told`` as
    the story: its system text, and the events the agent was told."""
    shared = runs(words(text), RECITE_WORDS) & runs(words(told), RECITE_WORDS)
    if not shared:
        return None
    run = " ".join(min(shared)[:6])
    return Flaw("echo", f"it recites its prompt ({run!r} …) instead of speaking")


def looped(text: str) -> Flaw | None:
    """``text`` says one sentence (of :data:`LOOP_WORDS` words or more) :data:`LOOP_TIMES`
    times or more, or one of :data:`TWICE_WORDS` words or more twice, or begins over again:
    says a run of :data:`SHARED_RUN_WORDS` words twice (Gemma 3 270M's Edmund said his first
    three sentences, then began them again and was cut off in the middle)."""
    said: dict[tuple[str, ...], int] = {}
    for sentence in _SENTENCE_END.split(text):
        key = tuple(words(sentence))
        if len(key) >= LOOP_WORDS:
            said[key] = times = said.get(key, 0) + 1
            if times >= LOOP_TIMES or (times == 2 and len(key) >= TWICE_WORDS):
                run = " ".join(key)
                return Flaw("loop", f"it says {run!r} {times} times over instead of speaking")
    at = repeated_at(text)
    if at is None:
        return None
    run = " ".join(words(text[at:])[:6])
    return Flaw("loop", f"it begins over again ({run!r} …) instead of going on")


def repeated_at(text: str) -> int | None:
    """Where ``text`` begins again a run of :data:`SHARED_RUN_WORDS` words it said before
    (the offset of that run's second start; None: nowhere)."""
    found = list(_WORD.finditer(text))
    folded = [m.group().casefold() for m in found]
    seen: set[tuple[str, ...]] = set()
    for i in range(len(folded) - SHARED_RUN_WORDS + 1):
        run = tuple(folded[i : i + SHARED_RUN_WORDS])
        if run in seen:
            return found[i].start()
        seen.add(run)
    return None


def unfinished(text: str) -> Flaw | None:
    """``text`` stops mid-sentence: its last mark is a comma, a colon or a semicolon (closing
    quotes aside; a winking ``;)`` ends on its bracket), or, with no mark, its last word is
    one a sentence goes on after (an article, a possessive, a conjunction, "I"), it ends on
    "name is", or its last sentence is a subject and "to be" alone ("I am"). Gemma 3 270M on
    llama-server closed its JSON after "…The executor's duty is to the will not,"; on
    llama-cpp-python Greta's line ran out at "…for your own good and not the"."""
    end = _unquoted_end(text)
    if not end:
        return None
    if end[-1] in _CUT:
        on = end[-1]
    elif _NAMING.search(end):
        on = "name is"
    elif _BARE_COPULA.fullmatch(last := _last_sentence(end)):
        on = last
    else:
        on = end.rsplit(None, 1)[-1].lower()
        if on not in _GOES_ON:
            return None
    return Flaw("unfinished", f"it stops mid-sentence, on {on!r}: say the whole sentence")


def _unquoted_end(text: str) -> str:
    """``text`` without its closing quotes and the spaces around them."""
    return text.rstrip().rstrip(_CLOSING).rstrip()


#: Closing quotes.
_CLOSING = "\"'”’»"
#: The marks a sentence goes on after.
_CUT = ",:;，：；、"
#: Words no English sentence ends on without its stop (one ending so was cut off): "I" ends
#: one only as "so do I." (Gemma 3 270M's Callum ran out at "…and strong will I").
_GOES_ON = frozenset("a an the my your our their its and or but nor because i".split())
#: Words a clause goes on after, beyond :data:`_GOES_ON`: one cut on a comma after them
#: ("and then,", "the way to,") is not ended there.
_CLAUSE_GOES_ON = _GOES_ON | frozenset(
    "to of in on at for with from by as than that which who whom whose when where while if "
    "so then is are was were be been am will would can could should must shall may might "
    "have has had do does did not this these those some any every each no very more most "
    "such into about after before until since although though whether also just".split()
)
#: A line ending, with no mark, as a name is about to be said (Gemma 3 270M's Nell, asked
#: again after opening with her own name, said "my name is").
_NAMING = re.compile(r"(?i)\bname\s+is$")
#: A last sentence that is a subject and its "to be" and no more, with no mark: Gemma 3 270M's
#: Alicia (extracurricular-choices) ended a long line "… Do you think it's possible? I am"
#: ("That's who I am" ends on them too, but says more; an answer so, "… lying? I am", without
#: its stop reads as cut off too).
_BARE_COPULA = re.compile(
    r"(?i)(?:i|you|we|they|he|she|it)\s+(?:am|are|is|was|were)|(?:i'm|you're|we're|they're)"
)


def _last_sentence(text: str) -> str:
    """The words after ``text``'s last sentence's stop (all of it when none)."""
    return re.split(r"[.!?…]\s+", text)[-1].strip()


#: The longest beginning of a text that ends a sentence (its stop, closing quotes or
#: brackets, then a space).
_WHOLE = re.compile(r"(?s)(.*[.!?…。！？][\"'”’»)]*)\s")


def whole_sentences(text: str) -> str:
    """``text`` up to the end of its last whole sentence ("" when none ends before its
    end)."""
    match = _WHOLE.match(text)
    return match.group(1).strip() if match else ""


def mended_line(flaw: Flaw | None, text: str, check: Callable[[str], Flaw | None]) -> Flaw | None:
    """``flaw``, ``text``'s under ``check``; a cut-off utterance's mended to its whole
    sentences, one that begins over again to the whole sentences before it does, one that
    ends with a sentence of its instructions to the sentences before it, when they are at
    least half of its words (not "Mr." of "Mr. Smith said,") and ``check`` finds nothing
    wrong with them; one whose first words announce it to the line they announce, when it
    has :data:`ANNOUNCED_WORDS` words or more and ``check`` passes it."""
    if flaw is None or flaw.kind not in _MENDING:
        return flaw
    if flaw.start is not None:
        said = text[flaw.start :].strip()
        said = said[:1].upper() + said[1:]
        if len(words(said)) >= ANNOUNCED_WORDS and check(said) is None:
            return replace(flaw, mended=said, mending="cut after the words announcing it")
    if flaw.kind == "loop":
        at = repeated_at(text)
    else:
        at = len(text) if flaw.kind == "unfinished" else flaw.cut
    if at is None:  # (said three times over, each time short; an echo not at the end)
        return flaw
    whole = whole_sentences(text[:at])
    if 2 * len(words(whole)) >= len(words(text)) and check(whole) is None:
        return replace(flaw, mended=whole, mending=_MENDING[flaw.kind])
    ended = flaw.kind == "unfinished" and _clause_ended(text)
    if ended and check(ended) is None:
        return replace(flaw, mended=ended, mending="ended at its last comma, a whole clause")
    return flaw


def _clause_ended(text: str) -> str:
    """``text``, cut on a comma or a semicolon after a word a clause may end on, ended there
    with a full stop ("" when it is not): Gemma 3 270M, held to JSON by a grammar, closed
    its string after "I'll be back," and "This is a good decision for me,"."""
    end = _unquoted_end(text)
    if not end or end[-1] not in ",;，；":
        return ""
    clause = end[:-1].rstrip()
    last = clause.rsplit(None, 1)[-1].lower() if clause else ""
    if not _LETTERS.search(last) or last.strip(_CLOSING) in _CLAUSE_GOES_ON:
        return ""
    return clause + "."


#: What a mend leaves out, by the flaw's kind.
_MENDING = {
    "unfinished": "cut after its last whole sentence",
    "loop": "cut where it began again",
    "echo": "cut before the instructions it repeated",
}


#: Personal pronouns and the forms of "be" as :func:`as_anyone` reads them: a line is the same
#: line said by another person.
_PERSON = {
    **dict.fromkeys("i you we he she they me us him them".split(), "+p"),
    **dict.fromkeys("my your our his her their mine yours ours hers theirs".split(), "+q"),
    **dict.fromkeys("myself yourself ourselves himself herself themselves".split(), "+r"),
    **dict.fromkeys("am are is".split(), "+be"),
    **dict.fromkeys("was were".split(), "+was"),
}
#: A contraction's ending after a pronoun, spelled out ("I've" is "I have").
_CONTRACTED = {"ve": "have", "m": "+be", "re": "+be", "s": "+be", "ll": "will", "d": "would"}


@functools.lru_cache(maxsize=4096)
def as_anyone(text: str) -> tuple[str, ...]:
    """:func:`words` of ``text`` with each personal pronoun and form of "be" the same
    whoever says it, contractions after a pronoun spelled out: Gemma 3 270M's Kira told
    Hannah "I've been very busy with everything I did today. And now we are ready for a
    discussion.", the end of Joyce's "You have been very busy with everything you did
    today, and now we are ready for a discussion." (Kept for the last 4,096 lines: every
    speaker of a round reads the lines heard in it.)"""
    said: list[str] = []
    for word in words(text):
        head, _, tail = word.partition("'")
        if tail in _CONTRACTED and head in _PERSON:
            said += (_PERSON[head], _CONTRACTED[tail])
        else:
            said.append(_PERSON.get(word, word))
    return tuple(said)


@functools.lru_cache(maxsize=4096)
def _pieces(line: str) -> tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]:
    """A line heard, and each of its sentences, as :func:`as_anyone` reads them, and their
    runs of :data:`COPY_WORDS` words (:func:`others_words`'; read once a line)."""
    parts = frozenset(as_anyone(part) for part in (line, *_SENTENCE.findall(line)))
    return parts, frozenset().union(*(runs(part, COPY_WORDS) for part in parts))


def _copied(mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    """A line of words ``mine`` is ``theirs`` verbatim (of :data:`COPY_WORDS` words or more),
    one of the two holds the whole of the other of :data:`CONTAINED_WORDS` words or more, or
    they share a run of :data:`SHARED_RUN_WORDS` words in a row (both :func:`as_anyone`'s)."""
    if len(theirs) < COPY_WORDS:
        return False
    if mine == theirs:
        return True
    short, long_ = sorted((mine, theirs), key=len)
    if len(short) >= CONTAINED_WORDS and f" {' '.join(short)} " in f" {' '.join(long_)} ":
        return True
    return bool(runs(mine, SHARED_RUN_WORDS) & runs(theirs, SHARED_RUN_WORDS))


def utterance_flaw(
    text: str,
    instructions: str,
    others: Iterable[str],
    last: str | None,
    earlier: Iterable[str] = (),
    own: Iterable[str] = (),
) -> Flaw | None:
    """What is wrong with an utterance of an agent that decided to speak: empty, debris,
    punctuation, an echo of its prompt's ``instructions``, a sentence said over and over, a
    sentence cut off, a copy of a line of ``others`` (this round), of the speaker's ``last``
    line or of a line of ``earlier`` (others', in the rounds the speaker remembers), a
    repeat of one of its ``own`` lines of those rounds, or a line made of their words
    (:func:`others_words`; Gemma 3 270M's Adrian, celebrity-worship, said "I'm happy to be
    here now. I would like to sing for you.", Laura's words and then his own of the round
    before); a copy in any person (:func:`as_anyone`)."""
    if not text.strip():
        return Flaw("empty", "it said nothing, though you decided to speak")
    flaw = debris(text) or wordless(text, "utterance") or echo(text, instructions)
    flaw = flaw or scale_labels(text) or looped(text) or unfinished(text)
    if flaw is not None:
        return flaw
    others, earlier = list(others), list(earlier)
    mine = as_anyone(text)
    if any(_copied(mine, as_anyone(line)) for line in others):
        return Flaw("copy", "it copies another's line this round word for word")
    if last is not None and _copied(mine, as_anyone(last)):
        return Flaw("repeat", "it repeats your own last line word for word")
    own = list(own)
    if any(_copied(mine, as_anyone(line)) for line in own):
        return Flaw("repeat", "it repeats a line you said in an earlier round word for word")
    if any(_copied(mine, as_anyone(line)) for line in earlier):
        return Flaw("copy", "it copies a line another said in an earlier round word for word")
    heard = [*others, *earlier]
    flaw = others_words(mine, heard)
    if flaw is None and own and others_words(mine, [*heard, *own]) is not None:
        return Flaw("repeat", "it pieces together lines said before, yours among them")
    return flaw


def others_words(mine: tuple[str, ...], lines: Iterable[str]) -> Flaw | None:
    """A line of words ``mine`` (:func:`as_anyone`'s) made of ``lines``' words, word for
    word: wholly their runs of :data:`COPY_WORDS` words (a line of fewer than
    :data:`CONTAINED_WORDS` words: one whole line or sentence of theirs), as Gemma 3 270M's
    Callum said Edmund's line and then the last sentence of Nell's, "I do this to my
    brother: I will keep the place open until when I die!"; or, of
    :data:`CONTAINED_WORDS` words or more, :data:`COVERED_SHARE` of it in such runs, as its
    Diane said "Hello, I'm Sofia. Your name is Diane; we are at the court in the
    cafeteria.", Sofia's line to her without its "and" and its last sentence."""
    if len(mine) < COPY_WORDS:
        return None
    read = [_pieces(line) for line in lines]
    held = frozenset().union(*(held for _, held in read))
    said = [False] * len(mine)
    for at in range(len(mine) - COPY_WORDS + 1):
        if tuple(mine[at : at + COPY_WORDS]) in held:
            said[at : at + COPY_WORDS] = [True] * COPY_WORDS
    long_ = len(mine) >= CONTAINED_WORDS
    if all(said) and (long_ or any(mine in parts for parts, _ in read)):
        return Flaw("copy", "it pieces together lines others said, word for word")
    if long_ and sum(said) >= COVERED_SHARE * len(mine):
        return Flaw("copy", "most of it is others' words, word for word")
    return None
