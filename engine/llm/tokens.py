"""What reaches the model: tokens counted by socialsim, and system text a server drops.

socialsim counts each prompt's tokens with litellm's ``token_counter`` (tiktoken's
``cl100k_base``, bundled with litellm, for models it has no local tokenizer for: an estimate
within about 20% of most open models' tokenizers) and compares them with the
``prompt_tokens`` the server says it read:

* a streamed reply without a usage chunk is counted by socialsim, never recorded as 0;
* when a server reads far fewer tokens than were sent on a model's first exchange and the
  system message accounts for the gap, its chat template dropped the system role (Gemma's
  has none): with ``--system-role auto`` the model's system text moves to the head of the
  first user turn from then on, and the exchange is asked again;
* on any later exchange the same shortfall means the prompt was cut (a context window
  smaller than the prompt): flagged on the call.
"""

from __future__ import annotations

from typing import Any

from .settings import SystemRole

Messages = list[dict[str, str]]
#: A server that reads less than this share of the tokens sent, and at least
#: :data:`SLACK` fewer, did not read them all (tokenizers differ by about 20%, and a chat
#: template adds a few tokens a message).
SHORTFALL = 0.6
SLACK = 48


def merged(messages: Messages) -> Messages:
    """The messages with the system text at the head of the first user turn."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    if not system or not rest or rest[0]["role"] != "user":
        return messages
    head = "\n\n".join(system)
    return [{**rest[0], "content": f"{head}\n\n{rest[0]['content']}"}, *rest[1:]]


class Counter:
    """Counts tokens the way socialsim bills a reply no server counted."""

    def __init__(self, litellm: Any) -> None:
        self.litellm = litellm

    def messages(self, model: str, messages: Messages) -> int:
        return int(self.litellm.token_counter(model=model, messages=messages))

    def text(self, model: str, text: str) -> int:
        return int(self.litellm.token_counter(model=model, text=text)) if text else 0


class SystemRoles:
    """Where each model's system text goes, and what the first exchange showed."""

    def __init__(self, mode: SystemRole) -> None:
        self.mode = mode
        self._merge: dict[str, bool] = {}
        #: Models whose role a saved run gave: their next exchange is checked as a first.
        self._restored: set[str] = set()

    def restore(self, roles: dict[str, str]) -> None:
        """Where a saved run found each model's system text goes (keep or merge): used
        from the first exchange on; that exchange is still checked, and a dropped system
        text switches the model to merge again (the server changed)."""
        if self.mode != "auto":
            return
        for model, role in roles.items():
            self._merge[model] = role == "merge"
            self._restored.add(model)

    def resolved(self) -> dict[str, str]:
        """model -> keep or merge, for the models whose role is settled."""
        return {m: "merge" if v else "keep" for m, v in self._merge.items()}

    def shaped(self, model: str, messages: Messages) -> Messages:
        """``messages`` as ``model`` is sent them."""
        if self.mode == "merge" or self._merge.get(model):
            return merged(messages)
        return messages

    def settled(self, model: str) -> bool:
        return self.mode != "auto" or model in self._merge

    def checking(self, model: str) -> bool:
        """True while ``model``'s next exchange is checked as its first (not settled, or
        settled from a saved run)."""
        return not self.settled(model) or model in self._restored

    def check(self, model: str, sent: int, system: int, read: int) -> str | None:
        """The first exchange of ``model`` (server read ``read`` of ``sent`` tokens, ``system``
        of them the system text): None if all arrived, ``"dropped"`` if the system text was
        dropped (the model is merged from now on), ``"cut"`` if the prompt was cut."""
        first = model not in self._merge or model in self._restored
        if model not in self._merge:
            self._merge[model] = self.mode == "merge"
        self._restored.discard(model)
        if read <= 0 or read >= sent * SHORTFALL or sent - read < SLACK:
            return None
        if first and self.mode == "auto" and system > 0 and read <= (sent - system) * 1.25 + 16:
            self._merge[model] = True
            return "dropped"
        return "cut"
