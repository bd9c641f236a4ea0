"""The transcript ``socialsim run`` prints is, cell for cell and style for style, the rich
table it replaced (tui/cli/transcript.py), at every width; its own wrap of plain words is
rich's."""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.text import Text

from tui.cli.transcript import NARROWEST, Transcript, Turn, plain_lines

WORDS = [
    *"the budget cannot stretch to cover everyone this year, A0014: Remember that. —".split(),
    *"supercalifragilisticexpialidocious 日本語の言葉 wörds (A0072, I heard that.) a".split(),
    "two\nlines",
    "ends\n",
]
#: Words all of printable ASCII: what the transcript wraps itself.
PLAIN = [w for w in WORDS if w.isascii() and w.isprintable()] + ["   ", "x" * 70, "a  b"]
LABELS = ("", " [private]", " (forced)", " (human: ann)")


def cells(renderable: RenderableType, width: int) -> list[list[tuple[str, str]]]:
    """Each printed line as (character, style) pairs."""
    console = Console(
        width=width, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    lines = Segment.split_lines(console.render(renderable, console.options))
    return [[(ch, str(s.style or "")) for s in line for ch in s.text] for line in lines]


def turns(rng: random.Random, words: list[str] = WORDS) -> list[Turn]:
    made = []
    for k in range(rng.randint(0, 9)):
        target = f"→A{rng.randint(0, 99):04d}" if rng.random() < 0.7 else ""
        who = f"A{rng.randint(0, 999):04d}{target}{rng.choice(LABELS)}"
        said = " ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
        order = str(k + 1 + rng.choice((0, 0, 9, 99)))
        made.append(Turn(order, who, rng.choice(("bold", "magenta", "dim")), said))
    return made


@pytest.mark.parametrize("words", [WORDS, PLAIN], ids=["any", "plain"])
@pytest.mark.parametrize("seed", range(40))
def test_the_transcript_prints_what_its_table_prints(seed: int, words: list[str]) -> None:
    rng = random.Random(seed)
    transcript = Transcript(turns(rng, words))
    for width in (rng.randint(16, 200), 24, 40, 80, 160):
        assert cells(transcript, width) == cells(transcript.table(), width), width


def test_a_console_too_narrow_gets_the_table_and_no_turn_prints_nothing() -> None:
    transcript = Transcript([Turn("1", "A0001→A0002 [private]", "magenta", "words " * 20)])
    narrow = 1 + len("A0001→A0002 [private]") + 4 + NARROWEST - 1
    assert cells(transcript, narrow) == cells(transcript.table(), narrow)
    assert cells(Transcript([]), 80) == []


@given(
    st.text(st.sampled_from("ab xyz.,"), max_size=90).map(lambda s: s.replace("z", "z" * 30)),
    st.integers(1, 60),
)
def test_plain_words_are_wrapped_as_rich_wraps_them(text: str, width: int) -> None:
    console = Console(width=200, file=io.StringIO())
    rich = Text(text).wrap(console, width, justify="left", overflow="ellipsis")
    assert plain_lines(text, width) == [line.plain for line in rich]


@pytest.mark.parametrize("seed", range(20))
def test_a_console_without_colour_prints_the_tables_text_as_one_segment(seed: int) -> None:
    rng = random.Random(seed)
    transcript = Transcript(turns(rng))
    for width in (rng.randint(16, 200), 24, 80):
        plain = Console(width=width, file=io.StringIO())
        assert plain.color_system is None
        if width >= 80:  # (narrower, some labels leave too little room: the table)
            assert len(list(plain.render(transcript, plain.options))) <= 1
        with plain.capture() as ours:
            plain.print(transcript)
        with plain.capture() as table:
            plain.print(transcript.table())
        assert ours.get() == table.get(), width
