"""The last round as a round's deciding agents saw it, read once for all of them: the acts
any of them saw, who saw which, and what each agent's decision reads of them, in arrays
over the agents (rows) and the scenario's agents (columns, by ``index``)."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...core.state import Action

if TYPE_CHECKING:  # numpy is imported where a round is read: reading saves never needs it
    import numpy as np

SIGN = {"support": 1.0, "oppose": -1.0}


class LastRound:
    """The acts the agents ``names`` saw (``lasts``, each agent's in the order it saw them).

    Several agents' acts are merged in their speakers' order (as the acts of a round are
    seen; :attr:`in_order` tells whether each agent's keep it); who saw which is
    ``seen[row, act]``."""

    __slots__ = (
        "_index",
        "_rows",
        "acts",
        "attackers",
        "climate",
        "in_order",
        "seen",
        "supporters",
    )

    def __init__(
        self, names: Sequence[str], lasts: Sequence[Sequence[Action]], index: Mapping[str, int]
    ) -> None:
        import numpy as np

        self._index, rows = index, len(names)
        self._rows = np.array([index[n] for n in names], dtype=np.intp)
        groups: dict[tuple[int, ...], list[int]] = {}  # the rows that saw the very same acts
        keys: dict[int, tuple[int, ...]] = {}  # each list's acts, read once (rows share lists)
        for row, last in enumerate(lasts):
            key = keys.get(id(last))
            if key is None:
                key = keys[id(last)] = tuple(map(id, last))
            groups.setdefault(key, []).append(row)
        #: Whether every row saw its acts in the order of :attr:`acts`.
        self.in_order = True
        if len(groups) == 1:
            self.acts = list(lasts[0])
            self.seen = np.ones((rows, len(self.acts)), dtype=bool)
        else:
            ids = {id(a): a for same in groups.values() for a in lasts[same[0]]}
            self.acts = sorted(ids.values(), key=lambda a: index.get(a.speaker, -1))
            at = {id(a): k for k, a in enumerate(self.acts)}
            self.seen = np.zeros((rows, len(self.acts)), dtype=bool)
            for key, same in groups.items():
                where = [at[k] for k in key]
                self.in_order = self.in_order and all(map(operator.lt, where, where[1:]))
                group = np.zeros(len(self.acts), dtype=bool)  # one row, set for the group's
                group[where] = True
                self.seen[same] = group
        row_of = {n: r for r, n in enumerate(names)}
        #: Who attacked, and who supported, each agent (``[row, column]``).
        self.attackers = np.zeros((rows, len(index)), dtype=bool)
        self.supporters = np.zeros((rows, len(index)), dtype=bool)
        for k, a in enumerate(self.acts):
            hearer = row_of.get(a.target or "")
            if hearer is not None and self.seen[hearer, k] and a.stance in SIGN:
                toward = self.attackers if a.stance == "oppose" else self.supporters
                toward[hearer, index[a.speaker]] = True
        # the climate: the share of attacks among the acts others spoke (0 when none)
        spoken = np.array([bool(a.order) for a in self.acts], dtype=bool)
        speakers = np.array([index.get(a.speaker, -1) for a in self.acts], dtype=np.intp)
        heard = self.seen & spoken & (speakers != self._rows[:, None])
        attacks = np.array([a.stance == "oppose" for a in self.acts], dtype=bool)
        count = heard.sum(axis=1)
        share = (heard & attacks).sum(axis=1) / np.maximum(count, 1)
        #: The share of attacks among the acts others spoke, by row (0 when none): the
        #: judges count this round's the same way.
        self.climate = np.where(count > 0, share, 0.0)

    def attacked(self) -> list[bool]:
        """Whether each row's agent was attacked."""
        import numpy as np

        attacked: list[bool] = np.any(self.attackers, axis=1).tolist()
        return attacked

    def hit(self, fav: np.ndarray, friend_at: float) -> tuple[np.ndarray, np.ndarray]:
        """By row: which agents the row's agent saw attacked (``hit[row, victim]``, its own
        attacks counted too), and who last attacked one of its friends (``fav[row, victim]``
        at least ``friend_at``; an agent is no friend of itself: its own column is 0)."""
        import numpy as np

        index = self._index
        attacks = np.array(
            [
                (k, index.get(a.target or "", -1), index[a.speaker])
                for k, a in enumerate(self.acts)
                if a.stance == "oppose"
            ],
            dtype=np.intp,
        ).reshape(-1, 3)
        acts, victims, speakers = attacks[attacks[:, 1] >= 0].T  # attacks on an agent
        seen = self.seen[:, acts]
        last = np.full(fav.shape, -1, dtype=np.intp)  # each agent's last attack seen
        for at in in_steps(victims):  # (a victim's attacks in order: the last seen stays)
            now = last[:, victims[at]]
            np.copyto(now, at, where=seen[:, at])
            last[:, victims[at]] = now
        hit = last >= 0
        rows, hurt = np.nonzero(hit & (fav >= friend_at))
        hit_friends = np.zeros(fav.shape, dtype=bool)
        hit_friends[rows, speakers[last[rows, hurt]]] = True
        return hit, hit_friends

    def sides(self, fav: np.ndarray, friend_at: float) -> np.ndarray:
        """Heider: by row and agent, the summed favorability of the friends (``fav`` at
        least ``friend_at``) who backed (+) or attacked (-) the agent, acts in order."""
        import numpy as np

        index = self._index
        leaning = np.array(
            [
                (k, index[a.speaker], index.get(a.target or "", -1), SIGN[a.stance])
                for k, a in enumerate(self.acts)
                if a.order and a.stance in SIGN
            ],
            dtype=float,
        ).reshape(-1, 4)
        columns = leaning[leaning[:, 2] >= 0].T  # acts on an agent
        acts, by, on = columns[:3].astype(np.intp)
        friend = fav[:, by]
        counts = self.seen[:, acts] & (friend >= friend_at)
        terms = friend * columns[3]
        sides = np.zeros(fav.shape)
        for at in in_steps(on):  # each cell's terms added in the acts' order
            now = sides[:, on[at]]
            np.add(now, terms[:, at], out=now, where=counts[:, at])
            sides[:, on[at]] = now
        return sides


def in_steps(keys: np.ndarray) -> list[np.ndarray]:
    """The positions of ``keys`` in steps: step s holds the s-th position of each key
    (in order), so no step holds a key twice and each key's positions come in order."""
    import numpy as np

    by_key = np.argsort(keys, kind="stable")
    step = np.arange(len(keys)) - np.searchsorted(keys[by_key], keys[by_key])
    return [by_key[step == s] for s in range(int(step.max(initial=-1)) + 1)]
