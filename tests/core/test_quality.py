"""Each check of reply quality on the replies Gemma 3 270M really gave (issue 37), and on
speech that must pass."""

from __future__ import annotations

import pytest

from engine.core.naming import name_prefix, named_as_another, only_names, self_named
from engine.core.phrases import phrase_flaw
from engine.core.quality import Flaw, mended_line, utterance_flaw, whole_sentences
from engine.minds.prompts import DECIDE_RULES, RELATION_RULES

#: What the speech prompt instructs (prompts.speak_instructions) for a private word to Edmund.
SPEAK = (
    "Phase 2: say what you decided to say, in one to three sentences, in character. Reply "
    "with the spoken words only: no name prefix, no quotes, no stage directions.\n"
    "You decided to speak privately to Edmund (neutral); your intent: \nSay it now."
)


def kind(text: str, others: tuple[str, ...] = (), last: str | None = None) -> str | None:
    flaw = utterance_flaw(text, SPEAK, others, last)
    return None if flaw is None else flaw.kind


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_an_empty_utterance_of_an_agent_that_decided_to_speak_is_degenerate(text: str) -> None:
    assert kind(text) == "empty"


@pytest.mark.parametrize(
    "text",
    [
        "I will pay what I owe, and not a penny of its debts.\n}, ",
        ":[",
        '{"say": "Fine."}',
        'Yes": 0, "no',
        "We agree.<end_of_turn>",
        # Gemma's re-asked line, run on into template text (a real reply)
        "And I would like all of your help.\naudience: the target.\n\nPhase 2: decide if you can",
        # Gemma on llama-server speaking in its prompt's form (a real reply)
        "Scenario: Harrowgate Tavern. Traits: - Tim, the manager, is not happy",
        "I say we keep it.\nOthers present: Nell, Silas.",
        # Gemma's Carmen (materialism): her context's first label and what it held
        "What you have seen: Nothing has happened yet.",
        "Fine.\nSaid so far this round: Jason said nothing.",
        # Gemma's Nadia (iep-meeting) on her prompt's "S = 0.40 (0 = very negative, …)"
        "I'm going to say: 0.40, 1 = very negative, 2 = neutral, 3 = very positive",
        # Gemma's Elowen (quest, in the app), rounds 4 and 5: a code name for a line
        "Elowen_says_then_said_again_now_in_character.html",
        "e_lowen_says_this_time, said_so_here.html",
    ],
)
def test_json_or_template_debris_is_degenerate(text: str) -> None:
    assert kind(text) == "debris"


@pytest.mark.parametrize(
    "text",
    [
        "The scenario is simple: we sell, or we sink.",
        "My goal: keep the bar open. Now: who is with me?",
        "Tell me what you have seen: the shop, the sneakers, the price.",
        "Her traits: stubborn, loyal, and right about the roof.",
        "Forty thousand pounds = the roof. That is 2 of us against it.",  # one "=", no scale
        "Send it to nell_ward@harbour.net before noon.",  # two words joined once
    ],
)
def test_words_like_the_prompts_labels_in_a_sentence_are_speech(text: str) -> None:
    assert kind(text) is None


@pytest.mark.parametrize("text", ["...", "?!", "0.5, 0.3", "12345", "null"])
def test_an_utterance_of_punctuation_numbers_or_null_is_degenerate(text: str) -> None:
    assert kind(text) == "wordless"


PRESENT = ("Leo", "Nadia Khoury", "Irene", "Paul")


@pytest.mark.parametrize("text", ["Leo", "Leo!", "Irene, Paul.", "Nadia Khoury?"])
def test_an_utterance_of_names_alone_is_not_words(text: str) -> None:
    """Gemma 3 270M's Nadia (iep-meeting) said "Leo" as her whole line."""
    flaw = only_names(text, PRESENT)
    assert flaw is not None and flaw.kind == "wordless"
    assert flaw.note == f"the utterance {text!r} is only a name, not words"


@pytest.mark.parametrize("text", ["Leo, sit down.", "Yes.", "Paul agrees", "..."])
def test_a_line_with_a_word_besides_names_is_not_names_alone(text: str) -> None:
    assert only_names(text, PRESENT) is None  # ("..." is wordless by another check)


#: Gemma 3 270M's Edmund on llama-cpp-python, round 1 (tests/fixtures/gemma_runs, 87b1): the
#: start of his private line to Nell, 600 characters of it in all.
GARBLED = "S³lfaL4xGqE³e³Y2lU³X9³f³p³t³y³I³r³n³m³L5xGqE³e³Y2lU³X9³f³p³t³y³I³r³n³m³L5xGqE³e³Y2lU"


@pytest.mark.parametrize("text", [GARBLED, "x1 y2 z3 hello", "Ok: Qx7 Lm3z Rr9t Pq2w Zz8y"])
def test_an_utterance_of_letters_mixed_with_digits_is_garbled(text: str) -> None:
    assert kind(text) == "wordless"
    assert phrase_flaw(text, "summary", RELATION_RULES) is not None


@pytest.mark.parametrize(
    "text",
    [
        "I will pay 5000 pounds by the 3rd of May.",
        "Meet me at 10am by the B2B stall, room 4B.",
        "R2D2 and C3PO agree with Nell.",
        "我们必须现在卖掉这家酒馆，否则就太晚了。",  # a script without spaces: one long word
    ],
)
def test_a_few_words_with_digits_or_a_script_without_spaces_are_speech(text: str) -> None:
    assert kind(text) is None


@pytest.mark.parametrize("text", ["The will is null.", "It's null and void, Edmund."])
def test_null_in_a_sentence_is_a_word(text: str) -> None:
    assert kind(text) is None
    assert phrase_flaw(text, "summary", RELATION_RULES) is None


def test_an_echo_of_the_prompt_is_degenerate() -> None:
    echoed = (
        "If you are not sure, don't speak privately to Edmund (neutral) and your intent: one "
        "sentence.\nSay it now."
    )
    flaw = utterance_flaw(echoed, SPEAK, (), None)
    assert flaw is not None and flaw.kind == "echo"
    assert "speak privately to edmund neutral" in flaw.note


@pytest.mark.parametrize(
    "text",
    [
        # Gemma 3 270M's Jade (friendship), the speech prompt's last sentence after her own
        "I have not met Elena yet but she is in my class (and you are).\nSay it now.",
        "Say it now!",
    ],
)
def test_a_sentence_of_the_instructions_said_whole_is_an_echo(text: str) -> None:
    flaw = utterance_flaw(text, SPEAK, (), None)
    assert flaw is not None and flaw.kind == "echo" and "'say it now'" in flaw.note


def mended(text: str) -> Flaw | None:
    """``text``'s flaw as speech to Edmund, mended where a mend keeps it."""
    return mended_line(utterance_flaw(text, SPEAK, (), None), text, mended)


# (after a space too: every whole sentence before the echo is kept)
@pytest.mark.parametrize(
    "own",
    [
        "I have not met Elena yet but she is in my class (and you are).\n",
        "I have not met Elena yet. She sits by the window and draws all day. ",
    ],
)
def test_a_line_ending_with_a_sentence_of_its_instructions_is_mended_to_the_ones_before(
    own: str,
) -> None:
    flaw = mended(f"{own}Say it now.")
    assert flaw is not None and flaw.kind == "echo" and flaw.mended == own.strip()
    assert flaw.mending == "cut before the instructions it repeated"
    for text in ("Say it now. I have not met Elena yet, but she is kind.", "Hi.\nSay it now."):
        flaw = mended(text)  # the echo not at the end; too little before it
        assert flaw is not None and flaw.kind == "echo" and flaw.mended is None


@pytest.mark.parametrize(
    "text",
    ["Say it now, Edmund, or never.", "I will say it now: the roof first.", "I say we sell."],
)
def test_the_instructions_words_in_a_sentence_of_ones_own_are_speech(text: str) -> None:
    assert kind(text) is None


@pytest.mark.parametrize("text", ["I say it now", "I'll say it now.", "I am going to say it now!"])
def test_a_line_that_is_only_its_task_told_back_as_ones_own_is_an_echo(text: str) -> None:
    """Gemma 3 270M's Mei (helicopter-parent), asked again, said "I say it now", taken."""
    flaw = utterance_flaw(text, SPEAK, (), None)
    assert flaw is not None and flaw.kind == "echo" and "'say it now'" in flaw.note


def test_a_copy_of_a_line_heard_this_round_is_degenerate() -> None:
    heard = "The will names me, Edmund, and you know it."
    assert kind("The will names me, Edmund... and you know it!", (heard,)) == "copy"
    assert kind(f"Well. {heard} And more.", ("x" * 3, heard + " Twice over, I say.")) is None
    # a line of seven words or more, held whole in a longer one, is copied too
    long = "The will names me and nobody else, Edmund."
    assert kind(f"Listen: {long}", (long,)) == "copy"
    # Gemma 3 270M's Martin (gossip) said the first sentence of what Tessa had told him
    tessa = "I've seen this from the other side. I wonder if you know how that works."
    assert kind("I've seen this from the other side.", (tessa,)) == "copy"
    assert kind("I've seen this side.", (tessa,)) is None  # five words held: not a copy


def test_a_line_pieced_together_from_lines_heard_is_a_copy() -> None:
    """Gemma 3 270M's Callum (tavern, 2026-12-07) said Edmund's line, then the last
    sentence of Nell's: every word of it another's."""
    edmund = "I do this to my brother"
    nell = (
        "If you wish to stay and live in the room upstairs, so that no one else can use it as a "
        "shop or restaurant, then sell at your brother's expense. I will keep the place open "
        "until when I die!"
    )
    callum = "I do this to my brother: I will keep the place open until when I die!"
    flaw = utterance_flaw(callum, SPEAK, (nell,), None, (edmund,))
    assert flaw is not None and flaw.kind == "copy" and "pieces together" in flaw.note
    # words of its own, a fifth of the line or more: speech
    mine = f"{edmund}, and so, Nell, you must hear me: I will keep the place open until when I die!"
    assert kind(mine, (edmund, nell)) is None
    assert (
        kind("Enough, Nell. I will keep the place open, I tell you, as long as I live.", (nell,))
        is None
    )
    # a word of its own does not make another's sentence its own (80% of it theirs)
    flaw = utterance_flaw(
        "Enough. I will keep the place open until when I die!", SPEAK, (nell,), None
    )
    assert flaw is not None and flaw.kind == "copy" and "most of it is others'" in flaw.note


def test_a_long_run_of_another_lines_words_is_a_copy() -> None:
    """Gemma 3 270M on llama-cpp-python (the app, tavern round 1): Silas said most of Nell's
    line after a beginning of his own. Twelve words in a row shared is a copy; eleven are
    not."""
    nell = (
        "the place you are running The Crooked Lantern is for me to run it with my own money, "
        "if I must. If you wish to stay and live in the room upstairs, so that no one else can "
        "use it as a shop or restaurant, then sell at your brother's expense - without having "
        "any of my share taken by me! I will keep the place open until when I die!"
    )
    silas = (
        "I will stay in the room upstairs for life. If you wish to live there, so that no one "
        "else can use it as a shop or restaurant, then sell at your brother's expense - without "
        "having any of my share taken by me! I will keep this place open until when I die!"
    )
    assert kind(silas, (nell,)) == "copy"
    assert kind(silas, (), nell) == "repeat"  # the speaker's own last line, likewise
    eleven = "that no one else can use it as a shop or"
    assert kind(f"We agree {eleven} a bar, Nell.", (nell,)) is None
    assert kind(f"We agree so {eleven} restaurant, Nell.", (nell,)) == "copy"
    # Callum, after Nell in another run: her last sentence alone, ten words of it
    assert kind("I will keep the place open until when I die!", (nell,)) == "copy"
    assert kind("I will keep the place open.", (nell,)) is None  # six words: may coincide


#: Gemma 3 270M's Edmund (the app, tavern round 1): three sentences, then the same again,
#: cut off in the middle.
EDMUND = (
    "I do this to my brother, Edmund. I am the eldest son of Bram Holloway and will make his "
    "will known when he dies. He is a great-hearted man who loves children and would give you "
    "anything for your love. When you are not here, write me down in his name, or call him on "
    "the phone if we can't talk face to face.\nI do this to my brother, Edmund: I am the "
    "eldest son of Bram Holloway and will make his Will known when he dies. He is a "
    "great-hearted man who loves children and would give"
)


def test_a_line_that_begins_over_again_loops_and_is_mended_to_what_came_before() -> None:
    """Twelve words said twice in one line is a loop; the whole sentences before the second
    start are kept when they are most of it and pass the check."""

    def check(said: str) -> Flaw | None:
        return utterance_flaw(said, SPEAK, (), None)

    flaw = check(EDMUND)
    assert flaw is not None and flaw.kind == "loop" and "begins over again" in flaw.note
    mended = mended_line(flaw, EDMUND, check)
    assert mended is not None and mended.mending == "cut where it began again"
    assert mended.mended == EDMUND[: EDMUND.index("\n")]
    short = "We keep the bar. We keep the bar open for the village and the travellers, always."
    twice = f"{short} {short[10:]} {short[10:]}"
    assert kind(twice) == "loop"
    assert mended_line(check(twice), twice, check).mended is None  # (not most of it)
    eleven = "the bar open for the village and the travellers and"
    assert kind(f"Keep {eleven} more. Then {eleven} less.") is None


def test_the_speakers_own_last_line_repeated_is_degenerate() -> None:
    last = "I only want what father promised me."
    assert kind(last, (), last) == "repeat"


#: Gemma 3 270M's Laura (celebrity-worship, 2026-12-07): her line of round 1, said again
#: word for word in round 4 (she had spoken once in between).
LAURA = "I was born in 1980, and I'm very happy to be here now."


def test_a_line_of_the_speakers_own_in_an_earlier_round_repeated_is_degenerate() -> None:
    between = "I don't know where you want to go, but I promise I won't tell anyone else."
    flaw = utterance_flaw(LAURA, SPEAK, (), between, (), (LAURA, between))
    assert flaw is not None and flaw.kind == "repeat" and "earlier round" in flaw.note
    assert utterance_flaw(LAURA, SPEAK, (), between, (), (between,)) is None
    # her own earlier line inside a new one: as another's would be, a repeat
    again = f"{LAURA} Tonight I want to hear you sing."
    assert utterance_flaw(again, SPEAK, (), None, (), (LAURA,)).kind == "repeat"
    # a point of hers made again in words of this round's: speech
    anew = "I am happy to be here, Sophie, and I want you to write that essay yourself."
    assert utterance_flaw(anew, SPEAK, (), None, (), (LAURA,)) is None


def test_a_line_pieced_together_from_anothers_words_and_the_speakers_own_is_a_repeat() -> None:
    """Gemma 3 270M's Adrian (celebrity-worship, round 4): Laura's words of round 1, then
    his own line of round 3."""
    own = "I would like to sing for you. I'd love it if you were with me."
    adrian = "I'm happy to be here now. I would like to sing for you."
    assert utterance_flaw(adrian, SPEAK, (), None, (LAURA,)) is None  # others' alone: 5 words
    flaw = utterance_flaw(adrian, SPEAK, (), None, (LAURA,), (own,))
    assert flaw is not None and flaw.kind == "repeat" and "yours among them" in flaw.note
    mine = "I'm happy to be here now, and tonight Maya and I will sing the duet she wrote."
    assert utterance_flaw(mine, SPEAK, (), None, (LAURA,), (own,)) is None


@pytest.mark.parametrize(
    "text",
    [
        # Gemma 3 270M on llama-server, a re-asked line (a real reply)
        "The building passes to Edmund and Nell in equal shares, Greta may live upstairs for "
        "life, and Callum receives my recipe book and thanks. The executor's duty is to the "
        "will not,",
        "What I want is this: ",
        "We sell the tavern;",
        '"You promised me,"',
        "我们不卖，",
        # Gemma 3 270M's Greta on llama-cpp-python: no mark, a word no sentence ends on
        "Dear Greta, I have written you a will and we agreed that if there was anything in it "
        "that you thought would be beneficial to us then I would do so. Please keep this house "
        "for your own good and not the",
        "We sell, and",
        # Gemma 3 270M's Callum on llama-cpp-python (2026-12-06): no mark, ends on "I"
        "You are all going to need a year to make up your mind, so I hope that with good "
        "conscience and strong will I",
        # Gemma 3 270M's Nell on llama-cpp-python (2026-12-07), asked again after a line
        # that named her as another would
        "my name is",
        "Hello everyone. My name is ",
        # Gemma 3 270M's Alicia (extracurricular-choices, 2026-12-07, in the app): a long
        # line ending on a sentence of a subject and its verb alone
        "I want to be an actor. Do you think it's possible? I am",
        "We went home. They were",
    ],
)
def test_an_utterance_cut_off_mid_sentence_is_degenerate(text: str) -> None:
    assert kind(text) == "unfinished"


@pytest.mark.parametrize(
    "text",
    [
        "I had this dream",
        "I told her",
        "The house is his",
        "Who is it for",
        "Because.",
        "So do I.",
        "My name is Nell",
        "I know what your name is.",
        "That's who I am",
        "I am.",
    ],
)
def test_a_line_without_its_stop_on_a_word_a_sentence_ends_on_is_finished(text: str) -> None:
    assert kind(text) is None


@pytest.mark.parametrize(
    ("text", "mended"),
    [
        # Gemma 3 270M's Callum, asked again too (a real reply)
        (
            "I'm going to buy my auntie a house in the harbour, and she can live there for "
            "life. I don't want her living upstairs,",
            "I'm going to buy my auntie a house in the harbour, and she can live there for life.",
        ),
        ('Fine! "We keep it." Then we vote,', 'Fine! "We keep it."'),
        # no whole sentence before the cut, or too few of its words: ended at the comma
        ("We vote on it publicly,", "We vote on it publicly."),
        (
            "He said Mr. Smith would know, and that is why we wait,",
            "He said Mr. Smith would know, and that is why we wait.",
        ),
        ("I only want what father promised me. And then,", None),  # the rest is my last line
    ],
)
def test_a_cut_off_utterance_offers_its_whole_sentences_when_they_are_most_of_it(
    text: str, mended: str | None
) -> None:
    def check(said: str) -> Flaw | None:
        return utterance_flaw(said, SPEAK, (), "I only want what father promised me.")

    flaw = mended_line(check(text), text, check)
    assert flaw is not None and flaw.kind == "unfinished"
    assert flaw.mended == mended
    assert mended_line(None, text, check) is None
    assert whole_sentences("no stop at all,") == ""


@pytest.mark.parametrize(
    ("text", "mended"),
    [
        # Gemma 3 270M, held to JSON by a grammar, closed its string after a comma
        ("I'll be back,", "I'll be back."),
        ("This is a good decision for me,", "This is a good decision for me."),
        ("I'm not sure I want to talk to you, Nora,", "I'm not sure I want to talk to you, Nora."),
        ("We wait;", "We wait."),
        # a clause that goes on after its last word is not ended there
        ("Then the hall, and then,", None),
        ("I agree to say, as I said before,", None),
        ("You know what I want to,", None),
        ("Ann,", None),  # only a name: the mend is checked too
        ("Listen: ", None),  # a colon announces more
    ],
)
def test_a_cut_line_with_no_whole_sentence_is_ended_where_a_clause_ends(
    text: str, mended: str | None
) -> None:
    def check(said: str) -> Flaw | None:
        return utterance_flaw(said, SPEAK, (), None) or only_names(said, ["Ann", "Bob"])

    flaw = mended_line(check(text), text, check)
    assert flaw is not None and flaw.kind == "unfinished"
    assert flaw.mended == mended
    if mended is not None:
        assert flaw.mending == "ended at its last comma, a whole clause"


@pytest.mark.parametrize(
    ("text", "others", "last"),
    [
        ("I agree with you.", ("I agree with you.",), None),  # short lines may coincide
        ("Edmund, I will not speak privately about this.", (), None),
        ("[sighs] Very well, Edmund.", (), None),
        ("Fine.", (), "Fine."),
        ("We said 50%, not 60%: that was the deal.", (), None),
        ("Bist du sicher? Ça suffit, Edmund.", (), None),
        ("Listen.\nThe will is clear: Edmund and Nell share it.", (), None),
        ("No. No. No. I will not sell.", (), None),  # short words repeated are speech
        ("We keep it. You heard me: we keep it. Yes, we keep it.", (), None),
        ("Wait, Edmund—", (), None),  # trailing off is speech
        ('You said (and I quote): "never".', (), None),
        ("Fine...", (), None),
        ("See you at the vote ;)", (), None),
    ],
)
def test_real_speech_passes(text: str, others: tuple[str, ...], last: str | None) -> None:
    assert kind(text, others, last) is None


@pytest.mark.parametrize(
    "text",
    ['": 0, "', '"}, {"', '": 5895726, "', "'+432962747210,'", "'>0.50, '", ": null, ", "NULL"],
)
def test_a_summary_of_punctuation_or_null_is_degenerate(text: str) -> None:
    flaw = phrase_flaw(text, "summary", RELATION_RULES)
    assert flaw is not None and flaw.kind in ("wordless", "debris")


@pytest.mark.parametrize(
    "text",
    [
        "one sentence",
        "one sentence (public only) or null when ",
        # Gemma 3 270M went on after the copy, and these were taken (saved runs, 2026-12-07)
        "one sentence (no others than the target)",
        "one sentence. target = all",
        # Gemma's Owen (discipline-policy, in the app): opening with the intent's own
        # description, the rest the rules' words too (4 of its 7 word pairs theirs)
        "one sentence in private (public only) or silent",
        "One sentence: defend Emma",
    ],
)
def test_an_intent_copied_from_the_schemas_description_is_degenerate(text: str) -> None:
    flaw = phrase_flaw(text, "intent", DECIDE_RULES)
    assert flaw is not None and flaw.kind == "description"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Win Edmund over to selling the farm.",
        "Tell her the truth.",
        "Support Mara.",
        "Keep the peace: no shouting.",
        "Win the vote (quietly).",
        "Win the vote in one sentence.",
        "One of them must pay.",
    ],
)
def test_an_intent_in_words_passes(text: str) -> None:
    assert phrase_flaw(text, "intent", DECIDE_RULES) is None


def test_a_summary_in_words_passes() -> None:
    assert phrase_flaw("He lied to me about the debts.", "summary", RELATION_RULES) is None


@pytest.mark.parametrize(
    "text",
    [  # Gemma 3 270M on a real llama-server, one turn each
        "When you were a child\nYou were an alcoholic.\n"
        + "You were in a relationship with a man who did not know you and could not talk "
        "to you.\n" * 4,
        "2. You want to make this building into a brewery.\n5. You have a business plan.\n"
        "6. You have a business plan.\n7. You have a business plan.",
        # Gemma's George (school-event, in the app): a sentence of 9 words twice over
        "I'm going to ask you, please do it now. I'm going to ask you, please do it now. "
        "You decide what the project will be and you decide.",
    ],
)
def test_one_sentence_said_over_and_over_is_degenerate(text: str) -> None:
    assert kind(text, (), None) == "loop"


@pytest.mark.parametrize(
    "text", ["I will not sell it. I will not sell it!", "No, no. Sit down. No, no."]
)
def test_a_short_sentence_said_twice_for_emphasis_is_speech(text: str) -> None:
    assert kind(text, (), None) is None


@pytest.mark.parametrize(
    ("text", "name", "said"),
    [
        ("Hello, Callum! I will keep the place open until I die.", "Callum", "Hello, Callum!"),
        ("I do this to my brother, Edmund, and to no one else.", "Edmund", "my brother, Edmund"),
        ("Callum, listen: the will is clear.", "Callum", "Callum,"),
        ("Callum: we keep the bar.", "Callum", "Callum:"),
        ("Well, Ms. Rivera? We are waiting.", "Ms. Rivera", "Well, Ms. Rivera?"),
        ("Thank you, Rivera. The plan stands.", "Ms. Rivera", "Thank you, Rivera"),
        ("Sam, you know I am right.", "Sam Lee", "Sam,"),
        # Gemma's Sandra (friendship), to Nora
        ("I agree with you, Sandra. I think it's a great idea.", "Sandra", ", Sandra."),
        # Gemma's Joyce (school-refusal), to everyone
        ("Hey, this is what I told you, Joyce: 10.", "Joyce", ", Joyce:"),
        # Gemma's Grace (class-election), to Daniel
        ("Grace says her own words: 10:35, classroom.", "Grace", "Grace says"),
        # Gemma's Thistle (quest), to everyone, round 8
        (
            "Thistle say what you decide to speak about. You will not be allowed to talk.",
            "Thistle",
            "Thistle say",
        ),
        # Gemma's Elowen (quest), to everyone: narrated in an apposition
        (
            "The party's leader, Elowen, says: The party has learned the truth.",
            "Elowen",
            "Elowen, says:",
        ),
        # Gemma's Greta (tavern), her name a label after initials, and a sentence later
        ("S.G. Greta: It's a long time since we last spoke.", "Greta", "Greta:"),
        ("I agree. Greta, you know the will is clear.", "Greta", "Greta,"),
    ],
)
def test_a_line_that_speaks_to_its_speaker_as_another_would_is_degenerate(
    text: str, name: str, said: str
) -> None:
    """Gemma 3 270M's Callum said "Hello, Callum!" and its Edmund "…my brother, Edmund"."""
    flaw = self_named(text, name)
    assert flaw is not None and flaw.kind == "self"
    assert flaw.note == f"{said!r} speaks to or of you as another would, but you are {name}"


@pytest.mark.parametrize(
    ("text", "name", "others"),
    [
        ("Hello, Nell! The will is clear.", "Callum", ()),
        ("I, Callum, swear it before you all.", "Callum", ()),
        ("Callum is my name, and I stand by what I said.", "Callum", ()),
        ("Hello, will you hear me out?", "Will", ()),  # a name is matched as written
        ("My friend Callumson knows the brewer.", "Callum", ()),
        ("Sam, you know I am right.", "Sam Lee", ("Sam Lee", "Sam Park")),  # another Sam
        ("Listen, Edmund, I hold the deeds.", "Nell", ()),
        ("Nell said hi. Callum will not.", "Callum", ()),  # a greeting ends before the name
        ("Nora, Sandra and I will draw the comics.", "Sandra", ()),  # a list, not an address
        ("I agree with you, Nora.", "Sandra", ()),
        ("Nora says we should draw the comics together.", "Sandra", ()),
        ("The will is read. Greta and I keep the flat.", "Greta", ()),  # no address
    ],
)
def test_a_line_that_names_its_speaker_or_speaks_to_another_is_speech(
    text: str, name: str, others: tuple[str, ...]
) -> None:
    assert self_named(text, name, others) is None


#: Gemma 3 270M's Linda's role (peer-pressure): the name her students know her by is hers.
LINDA = "Teacher: Year 9 health and PE teacher (Ms. Osei to her students)"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # Gemma's Linda, the teacher, to the room
        ("hey, my name is lili. i'm a 4th grader at the park school.", "my name is lili"),
        ("My name is Lili Park and I am new here.", "My name is Lili Park"),
        # Gemma's Andrew (transfer-student) took a number of his prompt's scales as a name
        ("My name is 10, you are in my class.", "My name is 10"),
    ],
)
def test_a_line_giving_its_speaker_another_name_is_degenerate(text: str, said: str) -> None:
    flaw = self_named(text, "Linda", (), LINDA)
    assert flaw is not None and flaw.kind == "self"
    assert flaw.note == f"{said!r} names you as another, but you are Linda"


@pytest.mark.parametrize(
    "text",
    [
        "My name is Linda, and I run this class.",
        "My name is Ms. Osei, and nobody goes near the quarry.",
        "My name is on the list for the trip.",  # no name given
        "My name is 3rd on the list.",
    ],
)
def test_a_line_giving_its_speakers_own_name_is_speech(text: str) -> None:
    assert named_as_another(text, "Linda", LINDA) is None


#: Gemma 3 270M's Eli (peer-pressure, llama-cpp-python, 2026-12-07): two sentences of his
#: own, then one about his prompt's rules ("no name prefix, no quotes").
ELI = (
    "I've just come to find out that I have a problem. This is something serious, and it is "
    "not going to go away. Please forgive me for what you said: the name prefix was not "
    "necessary, and the quote is not needed."
)


def test_a_line_speaking_of_its_instructions_terms_is_an_echo_cut_before_them() -> None:
    flaw = mended(ELI)
    assert flaw is not None and flaw.kind == "echo" and "'name prefix'" in flaw.note
    assert flaw.mended == ELI.split(" Please")[0]
    flaw = mended("No stage directions, Jake. I mean it, and I will not say it twice.")
    assert flaw is not None and flaw.kind == "echo" and flaw.mended is None  # not at the end


def test_a_line_ending_on_in_character_speaks_of_its_instructions() -> None:
    """Gemma 3 270M's Tessa (solar-farm, in the app), asked again, ran "Say it now." into
    the rules' "in character"; none of its runs of five words is the prompt's."""
    tessa = "I want to vote for Tessa, but I don't see the land.\nsay it now, in character."
    flaw = mended(tessa)
    assert flaw is not None and flaw.kind == "echo" and "'in character'" in flaw.note
    assert flaw.mended == "I want to vote for Tessa, but I don't see the land."


@pytest.mark.parametrize(
    "text",
    [
        "Stage fright is real, Jake.",  # a word of a term, not the term
        "Your name, prefixed with Mr., please.",
        "Her name, Prefect Leo, is on the list.",  # the words apart
        "That was out of character for Jake.",
        "Our main character in this play is Jake.",
    ],
)
def test_words_near_an_instructions_term_are_speech(text: str) -> None:
    assert kind(text) is None


@pytest.mark.parametrize(
    ("text", "field"),
    [
        # Gemma 3 270M's intents and summaries (saved runs of tavern, gossip, friendship,
        # iep-meeting and peer-pressure, 2026-12-06): bare values, not words
        ("all", "intent"),
        ("yes", "intent"),
        ("support,", "intent"),
        ("loves_to_dance", "intent"),
        ("not sure", "intent"),
        ("None", "summary"),
        ("not_yet", "summary"),
        ("No", "summary"),
        ("not clear", "summary"),
        ("not applicable", "summary"),
    ],
)
def test_a_bare_value_is_no_intent_and_no_summary(text: str, field: str) -> None:
    flaw = phrase_flaw(text, field, RELATION_RULES)
    assert flaw is not None and flaw.kind == "wordless" and "bare value" in flaw.note


@pytest.mark.parametrize("text", ["Paul", "nadia", "Paul, Nadia!"])
def test_only_names_is_no_summary(text: str) -> None:
    flaw = phrase_flaw(text, "summary", RELATION_RULES, ["Paul", "Nadia"])
    assert flaw is not None and "'" + text + "' is only a name" in flaw.note


@pytest.mark.parametrize(
    "text",
    [
        "Support Paul.",
        "Stay silent.",
        "Paul lied to me.",
        "Not yet: first the roof.",
        "Eagerly.",
        "Fix the file_name bug first.",
    ],
)
def test_a_value_or_a_name_in_words_passes(text: str) -> None:
    assert phrase_flaw(text, "intent", DECIDE_RULES, ["Paul", "Nadia"]) is None


#: Gemma 3 270M's Joyce to the room and, later in the round, Kira to Hannah in private
#: (school-refusal, round 1, 2026-12-07).
JOYCE = (
    "I'm going to tell the class about this one. I don't know why I said it so early, but "
    "you can see that in the background of the room. You have been very busy with "
    "everything you did today, and now we are ready for a discussion."
)
KIRA = "I've been very busy with everything I did today. And now we are ready for a discussion."


def test_a_line_another_said_in_another_person_is_a_copy() -> None:
    assert kind(KIRA, (JOYCE,)) == "copy"
    assert kind("You said you would fix the roof before the winter rains.", ()) is None
    # the same words in another person, short of the thresholds, are speech
    assert kind("I have been very busy today, Joyce.", (JOYCE,)) is None
    swapped = ("I was right: you did nothing today.",)
    assert kind("You were right: I did nothing today.", swapped) == "copy"


#: Gemma 3 270M's Mei (helicopter-parent, round 1, 2026-12-07): her task told back to her.
MEI = (
    "You decide to speak in front of everyone. You want to do it without a parent's "
    "signature on the permission slips. Please sign this sheet for yourself, and I will be "
    "there to help you with any questions you have. See you tomorrow at 08:30."
)


def test_a_line_telling_the_speaker_its_task_echoes_the_prompt() -> None:
    flaw = utterance_flaw(MEI, SPEAK, (), None)
    assert flaw is not None and flaw.kind == "echo" and flaw.cut is None
    kept = "We keep the tavern and we pay the debts ourselves."
    last = f"{kept} You decided to speak publicly to everyone."
    flaw = utterance_flaw(last, SPEAK, (), None)
    assert flaw is not None and flaw.cut == len(kept) + 1
    mended = mended_line(flaw, last, lambda t: utterance_flaw(t, SPEAK, (), None))
    assert mended is not None and mended.mended == kept
    # said of another, or not as a sentence's opening, it is speech
    assert kind("So Tom, you decided to speak up at last. Good.") is None
    assert kind("Nobody told me you decided to speak for the class.") is None


#: Gemma 3 270M's Sofia to Diane in private and Diane's next line, to the room
#: (discrimination, round 2, 2026-12-07).
SOFIA = (
    "Hello, I'm Sofia. Your name is Diane, and we are at the court in the cafeteria. Please "
    "stand up to hear me."
)
DIANE = "Hello, I'm Sofia. Your name is Diane; we are at the court in the cafeteria."


def test_a_line_most_of_whose_words_another_said_is_a_copy() -> None:
    assert kind(DIANE, (SOFIA,)) == "copy"
    # a run of others' words in a line mostly of new words is speech
    assert kind("Fine, we are at the court, but I am not standing up for you.", (SOFIA,)) is None
    assert kind("Diane, we are at the court in the cafeteria, so sit down.", (SOFIA,)) is None


def test_a_speaker_calling_itself_another_present_or_told_its_own_name_speaks_as_another() -> None:
    present = ["Sofia", "Diane", "Amir"]
    flaw = self_named(DIANE, "Diane", present)
    assert flaw is not None and flaw.kind == "self" and "'Your name is Diane'" in flaw.note
    flaw = self_named("Hello, I am Sofia.", "Diane", present)
    assert flaw is not None and "'I am Sofia' names you as another" in flaw.note
    assert self_named("I'm Sofia's friend, and I'm worried.", "Diane", present) is None
    assert self_named("I'm Diane. Your name is Sofia, right?", "Diane", present) is None


def test_a_colon_opening_a_line_is_debris_and_a_speaker_narrated_anywhere_speaks_as_another() -> (
    None
):
    """Gemma 3 270M's Diane, asked again after "Diane says this to everyone now, …", said
    ``":\\n  the wordDiane: Diane says"``, and it was taken (discrimination, 2026-12-07)."""
    said = ":\n  the wordDiane: Diane says"
    assert kind(said) == "debris"
    flaw = self_named("the wordDiane: Diane says", "Diane", ["Diane", "Sofia"])
    assert flaw is not None and "'Diane says' speaks to or of you" in flaw.note
    assert self_named("Sofia says no, and Diane agrees.", "Diane", ["Diane", "Sofia"]) is None
    assert kind(":) Fine, we vote.") is None


def test_a_line_opening_with_a_name_and_a_colon_is_a_script_s_line() -> None:
    """Gemma 3 270M's Helen (bullying, 2026-12-07) said "Jane: I'm afraid you have to
    wait. …", and Jane "Alice's" as her whole line."""
    present = ["Jane", "Alice", "Megan"]
    flaw = name_prefix("Jane: I'm afraid you have to wait.", present)
    assert flaw is not None and flaw.kind == "debris" and "'Jane:'" in flaw.note
    assert name_prefix("Jane, I'm afraid you have to wait.", present) is None
    assert name_prefix("At 10:30 Jane comes.", present) is None
    assert only_names("Alice's", present) is not None
    assert only_names("Alice's bag is gone.", present) is None


def test_a_speaker_speaking_of_itself_in_the_third_person_speaks_as_another() -> None:
    """Gemma 3 270M's Thistle (quest, round 4, 2026-12-07)."""
    thistle = (
        "The Wyrm of your father killed Vessra. The Wyrm of her own creation, the one that "
        "Thistle has seen for hundreds of years, is dead now."
    )
    present = ["Thistle", "Garrick", "Elowen"]
    flaw = self_named(thistle, "Thistle", present)
    assert flaw is not None and "'Thistle has' speaks to or of you" in flaw.note
    assert self_named(thistle, "Garrick", present) is None  # said of her by another
    assert self_named("Thistle's map is wrong, and I know it.", "Thistle", present) is None
    # Gemma's Sophie (celebrity-worship, 2026-12-07): her mother as another would say it
    sophie = "The person who shapes I want to become is Sophie's mother, and it's not always easy."
    flaw = self_named(sophie, "Sophie", ["Sophie", "Laura"])
    assert flaw is not None and flaw.note.startswith('"Sophie\'s" speaks to or of you')


def test_a_speaker_greeting_its_role_s_name_or_telling_its_task_back_is_degenerate() -> None:
    """Gemma 3 270M in friendship (2026-12-07, round 1): Sandra, "Ms. Okafor to her
    students", said "Hello, Ms. Okafor!"; Elena told Sandra "I decided to speak privately
    with Sandra about my feelings, and I will say it now."."""
    role = "Teacher: homeroom and art teacher of class 7A (Ms. Okafor to her students)"
    present = ["Nora", "Jade", "Elena", "Sandra"]
    flaw = self_named("Hello, Ms. Okafor!", "Sandra", present, role)
    assert flaw is not None and "'Hello, Ms. Okafor!' speaks to or of you" in flaw.note
    assert self_named("Ms. Okafor is right, Nora.", "Jade", present, "Student") is None
    assert self_named("Call me Ms. Okafor in class, Nora.", "Sandra", present, role) is None
    elena = "I decided to speak privately with Sandra about my feelings, and I will say it now."
    assert kind(elena) == "echo"
    assert kind("I decided to speak up, because nobody else would.") is None


#: The speech prompt's instructions when the line is asked as a JSON field.
FIELDED = f"{SPEAK}\n\nsay: the words Elena says aloud now, in character."


def test_a_line_announcing_its_words_is_mended_to_the_words_it_announces() -> None:
    """Gemma 3 270M's Nell (tavern, 2026-12-07) said "I have decided to say, as you wish:
    the following: I will not buy …", and it was taken whole; its Helena (hospital) said
    "I have decided to speak in person, this time. …" as its whole line."""
    check = lambda t: utterance_flaw(t, SPEAK, (), None)  # noqa: E731
    nell = (
        "I have decided to say, as you wish: the following: I will not buy the building for "
        "my brother's sake. I will keep it open and running until your father is in hospital."
    )
    flaw = mended_line(check(nell), nell, check)
    assert flaw is not None and flaw.kind == "echo" and "announces its words" in flaw.note
    assert flaw.mended == nell[nell.index("I will not") :]
    assert flaw.mending == "cut after the words announcing it"
    lower = "I've decided to say the following: we sell the tavern and pay."
    flaw = mended_line(check(lower), lower, check)
    assert flaw is not None and flaw.mended == "We sell the tavern and pay."
    short = "I decided to say: we sell."  # (too few words left to be a line)
    flaw = mended_line(check(short), short, check)
    assert flaw is not None and flaw.kind == "echo" and flaw.mended is None
    helena = "I have decided to speak in person, this time. I'm not going to do it online."
    flaw = mended_line(check(helena), helena, check)
    assert flaw is not None and flaw.kind == "echo" and flaw.mended is None
    assert "tells itself its task" in flaw.note
    # Gemma's Brooke (gossip, 2026-12-07, in the app): chosen, not decided
    assert kind("I chose to speak in private, so I'm going to say it now. I said this.") == "echo"
    assert kind("I chose to speak up, and I would again.") is None
    # deciding to say something, or to speak up, is speech
    assert kind("I decided to say no to his offer, and I stand by it.") is None
    assert kind("I've decided to say this: we sell the tavern and pay the debts.") is None
    assert kind("I've decided to speak up, because nobody else would.") is None
    # Gemma's Ethan (helicopter-parent, in the app): that it decided to speak, and no more
    assert kind("I decided to speak") == "echo"
    assert kind("Fine. I have decided to speak.") == "echo"
    assert kind("I decided to speak today. I'm going to ask you, please.") == "echo"
    assert kind("I decided to speak, and you will listen to me about the trip.") is None
    # Gemma's Emma (discipline-policy, in the app): whom it speaks to, between (a mend of a
    # first reply cut off at its comma was taken so)
    emma = "Yes, Marcus. I have decided to speak to you privately today."
    flaw = mended_line(check(emma), emma, check)
    assert flaw is not None and flaw.kind == "echo" and flaw.mended is None
    assert check(emma).cut == len("Yes, Marcus. ")
    assert kind("I decided to speak with Owen.") == "echo"
    assert kind("I chose to speak to the principal privately, and he agreed.") == "echo"
    assert kind("I decided to speak to you about the robot, Marcus.") is None
    assert kind("I decided to speak to Mr. Price about the robot.") is None  # (not its stop)
    assert kind("I decided to speak to Mr. Price privately.") == "echo"
    assert kind("I want to speak to you privately about the robot.") is None


def test_a_script_s_name_prefix_in_any_case_is_not_speech() -> None:
    """Gemma 3 270M's Mei (helicopter-parent, in the app) said "mei: I said you decide to
    speak"; another's name so is a prefix too. The name in a sentence keeps its case."""
    present = ["Ethan", "Mei", "Rachel"]
    flaw = self_named("mei: I said you decide to speak", "Mei", present)
    assert flaw is not None and flaw.kind == "self"
    flaw = name_prefix("RACHEL: we go on the trip.", ["Ethan", "Rachel"])
    assert flaw is not None and flaw.kind == "debris"
    assert self_named("I said I would mend it: that is all.", "Mei", present) is None
    assert name_prefix("Ethan's trip: we sign the slip.", ["Ethan", "Rachel"]) is None


def test_a_line_telling_back_the_speech_field_s_description_echoes_it() -> None:
    """Gemma 3 270M's Elena (friendship, 2026-12-07), asked for "say: the words Elena says
    aloud now, in character.", said "She says the words I said, in my own way."."""
    flaw = utterance_flaw("She says the words I said, in my own way.", FIELDED, (), None)
    assert flaw is not None and flaw.kind == "echo" and "'says the words'" in flaw.note
    last = "We vote tomorrow. She says the words I said."
    flaw = utterance_flaw(last, FIELDED, (), None)
    assert flaw is not None and flaw.cut == len("We vote tomorrow. ")
    # asked as plain text, the prompt holds no such description
    assert utterance_flaw("She says the words I said, in my own way.", SPEAK, (), None) is None
    assert utterance_flaw("Everyone says the same about the mill.", FIELDED, (), None) is None


def test_a_list_s_empty_item_is_debris() -> None:
    """Gemma 3 270M's Daniel (class-election, 2026-12-07) told Ryan "What I have done today
    is to say: 1.⏎2.⏎3.", and it was taken."""
    flaw = utterance_flaw("What I have done today is to say: 1.\n2.\n3.", SPEAK, (), None)
    assert flaw is not None and flaw.kind == "debris" and "('2.')" in flaw.note
    assert kind("Fine.\n-\nWe go home.") == "debris"
    # a list whose items say something, a number in a sentence, a dash between words: speech
    assert kind("Two things:\n1. We fix the roof.\n2. We pay the brewer.") is None
    assert kind("I owe you 3.") is None
    assert kind("We vote - now.") is None
