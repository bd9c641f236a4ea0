"""Whether a flawed reply is worth asking again, from how the model's last re-asks of the
same purpose went.

A re-ask says what was wrong with the reply (``parsing.asked_again``); a small model's
re-asks may still come to nothing, each a call of 10-40 s on a server that answers one
request at a time (Gemma 3 270M, llama-cpp-python: when a re-ask still showed it its reply,
116 of 161 came back word for word and 5 were taken). So after :data:`IN_VAIN` re-asks of
one purpose in a row came to nothing (flawed again, or not valid), that purpose's flawed
replies are not asked again: each is mended where its flaw can be (an intent or a summary
left out, a line cut after its whole sentences), else falls back at once, and its record
says why. Every :data:`RETRY_EVERY`-th of them is still asked again, and a re-ask that is
taken gives the purpose its re-asks back. A model whose re-asks help never meets this.
"""

from __future__ import annotations

#: Re-asks of one purpose in a row that came to nothing, after which its flawed replies
#: are not asked again.
IN_VAIN = 3
#: Of the flawed replies not asked again, every this many-th is asked again all the same.
RETRY_EVERY = 4


class Reasks:
    """How each model's re-asks went, by purpose, in this process."""

    def __init__(self) -> None:
        self._vain: dict[tuple[str, str], int] = {}
        self._held: dict[tuple[str, str], int] = {}

    def held_back(self, model: str, purpose: str) -> str:
        """Why a flawed reply of ``model`` for ``purpose`` is not asked again, to add to its
        record's note (empty: it is asked again)."""
        key = (model, purpose)
        vain = self._vain.get(key, 0)
        if vain < IN_VAIN:
            return ""
        held = self._held[key] = self._held.get(key, 0) + 1
        if held % RETRY_EVERY == 0:
            return ""
        return f"not asked again, as its last {vain} re-asks for {purpose} came to nothing"

    def went(self, model: str, purpose: str, taken: bool) -> None:
        """A re-ask of ``model`` for ``purpose`` was answered: ``taken`` as it came, or not."""
        key = (model, purpose)
        self._vain[key] = 0 if taken else self._vain.get(key, 0) + 1
