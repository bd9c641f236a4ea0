"""U_R by rule for a round's observers at once, on arrays: balance, repair and escalation
acting on how each agent feels about what it saw.

Each observer i judges the edge i -> j when j's act reached it or its own act was aimed at
j (E_ij, :func:`~engine.core.rules.triggers_among`). A speaker speaks once a round, so an
edge is moved by at most two acts, in their spoken order, and then by what i was told of j
(a fact it did not know, a peer's stance on j) and by a fading grudge. Every mechanism is a
few numpy operations over the (observer, agent) matrix, applied in that order, so each
edge sees the same float operations in the same order as a loop over its acts would. The
memory summary of an edge is its most important note (the greatest text of a tie).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...core.changes import CODE, overrides
from ...core.columns import hostile_codes
from ...core.rounding import rounded
from ...core.rules import MAX_FAV_DELTA, RIVAL_AT, ReadAct
from ...core.scenario import Status
from ...core.state import ALL, Mode
from ..base import AgentContext, Edge, JudgedEdges
from .event_effects import event_edges
from .judge import NEUTRAL, OPPOSE, STANCE, STANCE_OF, SUPPORT, VERB, Standing
from .lastround import in_steps
from .lens import ATTITUDE_LENS, TRUST_WEIGHT, PriorLens
from .params import (
    ADDRESSED_GROUP,
    ATTACKED_ME,
    BACKED_ME,
    CONFIDED,
    FOE_AT,
    FOE_BACKED,
    FORGIVE,
    FRIEND_AT,
    FRIEND_BACKED,
    FRIEND_HURT,
    GRUDGE,
    HEIDER,
    IMPORTANCE,
    INFORM,
    OUTGROUP,
    OWN_ACT,
    PEACE,
    PEACE_AT,
    PEACE_FROM,
    PUBLIC_STING,
    RECONCILE,
    SPOKE_TO_ME,
    TEMPER,
    Dynamics,
)

if TYPE_CHECKING:
    import numpy as np

_NEUTRAL, _RIVAL, _ALLY = CODE[Status.NEUTRAL], CODE[Status.RIVAL], CODE[Status.ALLY]

#: The notes an edge's judgement can make: (mechanism, its text given the agent whose act
#: or whose edge it is about; ``who``: that agent's name, ``act``: its act).
_NOTES = (
    ("own act", "I {verb} {target} {how}"),  # 0: my act; the agent is me
    ("peace", "I reached out to {who} and we made peace"),
    ("backed me", "{who} backed me {how}"),
    ("attacked me", "{who} attacked me {how}"),
    ("betrayed", "{who}, my ally, turned on me"),
    ("confided", "{who} confided in me"),  # 5
    ("spoke to me", "{who} spoke to me"),
    ("peace", "{who} reached out and we made peace"),
    ("attacked my friend", "{who} attacked my friend {target}"),
    ("backed my friend", "{who} backed my friend {target}"),
    ("sided with my foe", "{who} sided with {target}"),  # 10
    ("pressed their case", "{who} pressed the other side's case"),
    ("addressed the group", "{who} addressed the group"),
    ("informed me", "{who} told me something I did not know"),
    ("believed", "{who} {verb} {target}, and I believe it"),
    ("grudge faded", "{who} and I put our quarrel behind us"),  # 15
)
(
    OWN,
    PEACE_MINE,
    BACKED,
    ATTACKED,
    BETRAYED,
    CONFIDED_IN,
    SPOKE,
    PEACE_THEIRS,
    HURT_FRIEND,
    BACKED_FRIEND,
    SIDED_FOE,
    PRESSED,
    ADDRESSED,
    INFORMED,
    BELIEVED,
    FADED,
) = range(len(_NOTES))


class _Acts:
    """The round's acts by speaker (agents in the columns' order): whether each spoke, to
    whom (-1: everyone), with what stance, in public or not, when, and what it said."""

    def __init__(self, acts: Sequence[ReadAct], index: dict[str, int], n: int) -> None:
        import numpy as np

        self.spoke = np.zeros(n, bool)
        self.target = np.full(n, -1, np.intp)
        self.stance = np.full(n, NEUTRAL, np.int8)
        self.public = np.zeros(n, bool)
        self.order = np.full(n, len(acts), np.intp)
        self.said: dict[int, str] = {}
        for k, (act, speaker, target, stance, mode) in enumerate(acts):
            j = index[speaker]
            if self.spoke[j]:
                raise ValueError(f"{speaker} acts twice in one round")
            self.spoke[j] = True
            self.target[j] = -1 if target is None or target == ALL else index[target]
            self.stance[j] = STANCE[stance]
            self.public[j] = mode is Mode.PUBLIC
            self.order[j] = k
            self.said[j] = act.utterance


def _note_texts(ids: list[int], acts: _Acts, names: list[str]) -> list[str]:
    """The texts of notes ``ids`` (note ``kind`` about agent ``a`` is ``kind * n + a``,
    its text reads the agent's act: stance, target and mode)."""
    n = len(names)
    verbs = [VERB[STANCE_OF[s]] for s in acts.stance.tolist()]
    targets = [names[t] if t >= 0 else ALL for t in acts.target.tolist()]
    hows = ["publicly" if p else "privately" for p in acts.public.tolist()]
    texts = []
    for text_id in ids:
        kind, agent = divmod(text_id, n)
        texts.append(_TEXTS[kind].format(names[agent], verbs[agent], targets[agent], hows[agent]))
    return texts


#: :data:`_NOTES`' texts with their fields by position: who, verb, target, how.
_TEXTS = tuple(text.format(who="{0}", verb="{1}", target="{2}", how="{3}") for _, text in _NOTES)


class _Notes:
    """The notes the mechanisms make, as (edge, importance, text id) columns; the text id
    of note ``kind`` about agent ``a`` is ``kind * n + a``."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.edges: list[np.ndarray] = []
        self.importance: list[np.ndarray] = []
        self.texts: list[np.ndarray] = []

    def add(self, kind: int, mask: np.ndarray, about: np.ndarray) -> None:
        """Note ``kind`` on the edges of ``mask`` (observer rows x agents), each about the
        agent ``about`` gives for it (the same shape as ``mask``)."""
        import numpy as np

        flat = np.flatnonzero(mask)
        if len(flat):
            self.edges.append(flat)
            self.importance.append(np.full(len(flat), IMPORTANCE[_NOTES[kind][0]], np.int64))
            self.texts.append(kind * self.width + about.reshape(-1)[flat])


def _make_peace(d: np.ndarray, o: np.ndarray, fav: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Reconciliation on ``m``: a lift of RECONCILE, at least to PEACE_AT, the feud ends
    (worked out on the few edges of ``m`` only: the same operations on each; ``d`` and
    ``o`` changed in place)."""
    import numpy as np

    at = np.flatnonzero(m)
    if not len(at):
        return d
    lifted, floor = d.take(at) + RECONCILE, PEACE_AT - fav.take(at)
    o.flat[at] = _NEUTRAL
    d.flat[at] = np.where(floor > lifted, floor, lifted)
    return d


def _ends_above(fav: np.ndarray, d: np.ndarray, level: float) -> np.ndarray:
    """:func:`~engine.core.rules.ends_above`, element by element."""
    import numpy as np

    return fav + np.where(d > MAX_FAV_DELTA, MAX_FAV_DELTA, d) > level


def judged_edges(
    ctxs: Sequence[AgentContext],
    acts: Sequence[ReadAct],
    standings: Sequence[Standing],
    lenses: Sequence[PriorLens],
    outgroup: np.ndarray,
    dynamics: Dynamics,
    start: np.ndarray | None = None,
) -> JudgedEdges:
    """U_R by rule of every edge ``ctxs``' agents judge this round, from the round's
    ``acts`` as they heard them (read: :func:`~engine.core.rules.read_acts`; each observer
    hears the public ones and the private ones it is party to), their standings, prior
    lenses and ``outgroup`` (``[i, j]``: j is of another faction than i, agents in the
    columns' order), plus the edges toward whoever the round's events implicate
    (:func:`.event_effects.event_edges`). All contexts share one state's columns.

    The mechanisms: my own act (reaching out to a rival makes peace), direct support and
    attack (peace, betrayal), balance through third parties, words to the room, regard
    for whoever told me a fact I did not know, Heider's hearsay and fading grudges, with
    in-group favoritism throughout; then the ``dynamics`` (:func:`_settled`) on the
    change, memories fading toward ``start`` (``[i, j]``: the starting favorability; None
    when they do not fade)."""
    import numpy as np

    columns = ctxs[0].view.columns
    index, n = columns.index, len(columns.names)
    rows = np.array([c.view.row for c in ctxs], np.intp)
    r = len(rows)
    said = _Acts(acts, index, n)
    here = rows[:, None]
    agents = np.arange(n)
    tgt, stance = said.target[None, :], said.stance[None, :]
    # what reached whom: j's act reached i; my act was aimed at j
    vis = said.spoke[None, :] & (said.public[None, :] | (tgt == here)) & (agents != here)
    mine = said.spoke[rows] & (said.target[rows] >= 0)
    own = mine[:, None] & (agents[None, :] == said.target[rows][:, None])
    fav = columns.fav[rows]
    codes = columns.status[rows]
    feud = hostile_codes(codes)
    og = outgroup[rows]
    bias = np.where(og, OUTGROUP, 0.0)
    warm = np.zeros((r, n))
    trust = np.zeros((r, n))
    trusting = np.zeros(r, bool)
    for row, lens in enumerate(lenses):
        for other, sign in lens.attitude.items():
            warm[row, index[other]] = ATTITUDE_LENS * sign
        if lens.trust:
            trusting[row] = True
            for other, sign in lens.trust.items():
                trust[row, index[other]] = sign
    temper = np.array([TEMPER[c.persona.archetype] for c in ctxs]).reshape(r, 4)
    warmth, thin, responsive = temper[:, 1:2], temper[:, 2:3], temper[:, 3:4]
    broker = np.array([s.broker for s in standings], bool)[:, None]
    on_me = vis & (tgt == here)
    attacked_me = feud & on_me & (stance == OPPOSE)
    notes = _Notes(n)
    as_col = np.broadcast_to(agents[None, :], (r, n))
    d = np.zeros((r, n))
    o = np.full((r, n), -1, np.int8)

    def my_act(d: np.ndarray, m: np.ndarray) -> np.ndarray:
        """My own act toward the agent judged; backing a rival who did not attack me
        makes peace."""
        s = said.stance[rows][:, None]
        gain = np.choose(s, [OWN_ACT["support"], OWN_ACT["oppose"], OWN_ACT["neutral"]])
        np.add(d, gain, out=d, where=m)
        notes.add(OWN, m, np.broadcast_to(here, (r, n)))
        peace = m & (s == SUPPORT) & feud & ~attacked_me
        notes.add(PEACE_MINE, peace, as_col)
        return _make_peace(d, o, fav, peace)

    after = vis & (said.order[None, :] < said.order[rows][:, None])
    d = my_act(d, own & ~after)
    # j's act: toward me
    backed = on_me & (stance == SUPPORT)
    gain = BACKED_ME * responsive * (1.0 + warm) * (1.0 - bias)
    peaceable = np.array([PEACE[c.persona.archetype] for c in ctxs])
    if dynamics.distrust:  # a foe's overture is distrusted, by all but peacemakers
        accept = 1.0 - dynamics.distrust * (1.0 - peaceable)[:, None]
        gain = np.where(feud, gain * accept, gain)
    np.add(d, gain, out=d, where=backed)
    notes.add(BACKED, backed, as_col)
    peace = backed & feud & _ends_above(fav, d, PEACE_FROM)
    notes.add(PEACE_THEIRS, peace, as_col)
    d = _make_peace(d, o, fav, peace)
    hit = on_me & (stance == OPPOSE)
    sting = np.where(said.public, PUBLIC_STING, 1.0)[None, :]
    np.subtract(d, ATTACKED_ME * thin * sting * (1.0 - warm) * (1.0 + bias), out=d, where=hit)
    notes.add(ATTACKED, hit, as_col)
    betrayed = hit & (codes == _ALLY)
    o[betrayed] = _RIVAL
    notes.add(BETRAYED, betrayed, as_col)
    word = on_me & (stance == NEUTRAL)
    confided = word & ~said.public[None, :]
    np.add(d, CONFIDED, out=d, where=confided)
    notes.add(CONFIDED_IN, confided, as_col)
    spoke = word & said.public[None, :]
    np.add(d, SPOKE_TO_ME, out=d, where=spoke)
    notes.add(SPOKE, spoke, as_col)
    # j's act: toward a third agent (a broker takes no side), or to the room
    third = vis & ~on_me & (tgt >= 0) & ~broker
    friend = fav.take(np.maximum(said.target, 0), axis=1)  # [i, j]: i's regard for j's target
    close = third & (friend >= FRIEND_AT)
    hurt = close & (stance == OPPOSE)
    np.subtract(d, FRIEND_HURT * friend * thin, out=d, where=hurt)
    notes.add(HURT_FRIEND, hurt, as_col)
    helped = close & (stance == SUPPORT)
    np.add(d, FRIEND_BACKED * warmth, out=d, where=helped)
    notes.add(BACKED_FRIEND, helped, as_col)
    sided = third & ~(friend >= FRIEND_AT) & (friend <= FOE_AT) & (stance == SUPPORT)
    np.subtract(d, FOE_BACKED, out=d, where=sided)
    notes.add(SIDED_FOE, sided, as_col)
    room = vis & ~on_me & ~third & (stance == NEUTRAL)
    notes.add(PRESSED, room & og, as_col)
    addressed = room & ~og
    np.add(d, ADDRESSED_GROUP * warmth, out=d, where=addressed)
    notes.add(ADDRESSED, addressed, as_col)
    d = my_act(d, own & after)
    # whoever told me a fact I did not know
    claims = sorted({c for s in standings for c in s.news})
    if claims:
        knew = np.array([[c in s.news for c in claims] for s in standings], np.int64)
        spoken = sorted(said.said)
        holds = np.zeros((len(claims), n), np.int64)
        for j in spoken:
            low = said.said[j].lower()
            holds[:, j] = [c in low for c in claims]
        informed = vis & ((knew.reshape(r, len(claims)) @ holds) > 0)
        np.add(d, INFORM, out=d, where=informed)
        notes.add(INFORMED, informed, as_col)
    # Heider: a peer's stance on j, by the credence I give the peer, in the order heard
    judged = vis | own
    d, believed = _hearsay(said, rows, judged, broker, fav, trusting, trust, og, d)
    notes.add(BELIEVED, believed >= 0, believed)
    # a grudge not renewed (nor its side's case pressed) this round fades
    climate = _climate(said, rows)
    calm = FORGIVE * peaceable * (1.0 - climate)
    fades = judged & feud & (o < 0) & ~attacked_me & ~(og & vis & (tgt < 0))
    if dynamics.distrust:  # slower
        calm = calm * (1.0 - dynamics.distrust * (1.0 - peaceable))
    if dynamics.persistence:  # not while I keep attacking its object myself
        fades &= ~(own & (said.stance[rows] == OPPOSE)[:, None])
    np.add(d, calm[:, None] * (1.0 - bias), out=d, where=fades)
    faded = fades & _ends_above(fav, d, RIVAL_AT)
    o[faded] = _NEUTRAL
    notes.add(FADED, faded, as_col)
    if dynamics.version > 1:
        hostile = np.where(o >= 0, hostile_codes(o), feud)
        d = _settled(d, fav, hostile, None if start is None else start[rows], dynamics)
    return _ordered(ctxs, rows, judged, d, o, notes, said, vis, own)


def _settled(
    d: np.ndarray,
    fav: np.ndarray,
    hostile: np.ndarray,
    start: np.ndarray | None,
    dyn: Dynamics,
) -> np.ndarray:
    """The round's favorability changes ``d`` of edges now at ``fav`` under the dynamics
    (:class:`~.params.Dynamics`; ``d`` changed in place): a loss weighs more than a gain
    (negativity), an established tie moves less (inertia), a change shrinks near the
    bound it heads for, and the edge fades toward its ``start`` unless it is a ``hostile``
    one that persists."""
    import numpy as np

    # (in place on ``d`` and the arrays made here: the same operations, fewer 8 MB arrays
    # at 1,000 agents; a product or sum is the same either way round)
    np.multiply(d, dyn.negativity, out=d, where=d < 0)
    if dyn.inertia:
        tie = np.abs(fav)
        tie *= dyn.inertia
        tie += 1.0
        d /= tie
    if dyn.fav_bound:
        room = 1.0 + fav
        np.subtract(1.0, fav, out=room, where=d > 0)
        room /= dyn.fav_bound
        np.minimum(room, 1.0, out=room)
        d *= room
    if start is not None:
        fading: float | np.ndarray = dyn.fading
        if dyn.persistence:  # a grudge above its level fades up slower
            slow = hostile & (start > fav) & (fav >= GRUDGE)
            fading = np.where(slow, dyn.fading * (1.0 - dyn.persistence), dyn.fading)
        toward = start - fav
        toward *= fading
        d += toward
    return d


def _hearsay(
    said: _Acts,
    rows: np.ndarray,
    judged: np.ndarray,
    broker: np.ndarray,
    fav: np.ndarray,
    trusting: np.ndarray,
    trust: np.ndarray,
    og: np.ndarray,
    d: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Heider's hearsay: each public stance a teller k took on j moves the edges toward j
    of the observers who judge j and heed k, by the credence they give k; ``d`` after it
    (changed in place), and who each edge believed last (-1: nobody). Every teller's
    effect is worked out at once; an edge's are added one teller at a time in the order
    heard (the tellers on one agent, step by step, several agents a step)."""
    import numpy as np

    tellers = np.flatnonzero(
        said.spoke & said.public & (said.target >= 0) & (said.stance != NEUTRAL)
    )
    tellers = tellers[np.argsort(said.order[tellers], kind="stable")]  # in the order heard
    believed = np.full(d.shape, -1, np.intp)
    if not len(tellers):
        return d, believed
    on, stance = said.target[tellers], said.stance[tellers]
    ear = judged[:, on] & ~broker & (rows[:, None] != tellers[None, :])
    # (in place on the arrays made here: the same operations on each cell)
    credence = fav[:, tellers]  # the peer's regard, if a friend's or a foe's
    np.putmask(credence, ~((credence >= FRIEND_AT) | (credence <= FOE_AT)), 0.0)
    if trusting.any():  # (a trust prior)
        credence = np.where(
            trusting[:, None], credence + TRUST_WEIGHT * trust[:, tellers], credence
        )
    ear &= (credence > 0) | ((credence < 0) & (stance != OPPOSE))
    np.multiply(credence, 1.0 - OUTGROUP, out=credence, where=og[:, tellers])
    moved = HEIDER * credence
    moved *= np.where(stance == SUPPORT, 1.0, -1.0)
    sure = ear & (credence > 0)
    for at in in_steps(on):  # at most one teller on each agent, in the order heard
        cols = on[at]
        now = d[:, cols]
        np.add(now, moved[:, at], out=now, where=ear[:, at])
        d[:, cols] = now
        who = believed[:, cols]
        np.copyto(who, tellers[at], where=sure[:, at])
        believed[:, cols] = who
    return d, believed


def _climate(said: _Acts, rows: np.ndarray) -> np.ndarray:
    """The share of attacks among the acts each observer heard from others: the public
    ones, and the private ones aimed at it."""
    import numpy as np

    n = len(said.spoke)
    public = said.spoke & said.public
    attack = said.stance == OPPOSE
    private = said.spoke & ~said.public & (said.target >= 0)
    aimed = np.bincount(said.target[private], minlength=n)
    aimed_attacks = np.bincount(said.target[private & attack], minlength=n)
    heard = public.sum() - public[rows] + aimed[rows]
    attacks = (public & attack).sum() - (public & attack)[rows] + aimed_attacks[rows]
    return np.where(heard > 0, attacks / np.maximum(heard, 1), 0.0)


def _ordered(
    ctxs: Sequence[AgentContext],
    rows: np.ndarray,
    judged: np.ndarray,
    d: np.ndarray,
    o: np.ndarray,
    notes: _Notes,
    said: _Acts,
    vis: np.ndarray,
    own: np.ndarray,
) -> JudgedEdges:
    """The judged edges, each observer's in the order their acts were heard (then the
    edges only its events moved), with their summaries, events' edges merged."""
    import numpy as np

    columns = ctxs[0].view.columns
    names, n = columns.names, len(columns.names)
    r = len(rows)
    # the summary: the most important note, the greatest text of a tie (each note as its
    # importance, then its text's rank in ``bits`` bits)
    best = np.full(r * n, -1, np.int64)
    summaries: list[str] = []
    bits = 0
    if notes.edges:
        edge = np.concatenate(notes.edges)
        ids = np.concatenate(notes.texts)
        texts, at = np.unique(ids, return_inverse=True)
        made = _note_texts(texts.tolist(), said, names)
        ordered = sorted(range(len(made)), key=made.__getitem__)
        rank = np.empty(len(made), np.int64)
        rank[ordered] = np.arange(len(made))
        bits = len(made).bit_length()
        np.maximum.at(best, edge, np.concatenate(notes.importance) << bits | rank[at])
        opening = f"Round {ctxs[0].round}: "
        summaries = [f"{opening}{made[k]}." for k in ordered]  # by rank
    order = np.where(vis, said.order[None, :], len(said.spoke) + 1)
    np.minimum(order, said.order[rows][:, None], out=order, where=own)
    row_of, col = _by_row_then(judged, order)
    at = row_of * n + col  # each edge's place among the observers' rows, flat
    chosen = best.take(at)
    noted = chosen >= 0
    importance, note = chosen >> bits, chosen & ((1 << bits) - 1)  # (the text's rank)
    importance[~noted] = 1
    # an edge without a note: "j was present", one note for each such j (in order)
    present = np.flatnonzero(np.bincount(col[~noted], minlength=n))
    place = np.zeros(n, np.int64)  # each agent's place among the present (where it is one)
    place[present] = np.arange(len(present))
    np.copyto(note, len(summaries) + place.take(col), where=~noted)
    opening = f"Round {ctxs[0].round}: "
    summaries += [f"{opening}{names[j]} was present." for j in present.tolist()]
    edges = JudgedEdges(
        rows[row_of],
        col,
        rounded(d.take(at), 4),
        o.take(at),
        summaries,
        note.astype(np.intp),
        importance.astype(np.int64),
    )
    eventful = [k for k, c in enumerate(ctxs) if c.events]
    if not eventful:
        return edges
    return edges.with_extra({k: event_edges(ctxs[k]) for k in eventful}, rows, columns.index)


def _by_row_then(cells: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows and columns of the true ``cells`` (a 2-D bool array) sorted by row, then by
    ``key`` (non-negative whole numbers, ``cells``' shape), then by column: each row's
    columns sorted by key, stably, the false cells' key past the greatest (a radix sort
    where the keys fit in 16 bits: 11 against 19 ms for the one sort of all the cells,
    packed, at 1,000 agents)."""
    import numpy as np

    past = int(key.max(initial=0)) + 1
    keys = key.astype(np.int16 if past < 1 << 15 else np.int64)
    np.putmask(keys, ~cells, past)
    cols = keys.argsort(axis=1, kind="stable")
    rows = np.repeat(np.arange(cells.shape[0]), np.count_nonzero(cells, axis=1))
    return rows, cols[np.take_along_axis(cells, cols, axis=1)]


def edges_toward(judged: JudgedEdges, names: list[str]) -> dict[str, Edge]:
    """One observer's judged edges, by the agent judged."""
    notes = judged.notes
    return {
        names[j]: (delta, override, notes[note], importance)
        for j, delta, override, note, importance in zip(
            judged.target.tolist(),
            judged.delta.tolist(),
            overrides(judged.override),
            judged.note.tolist(),
            judged.importance.tolist(),
            strict=True,
        )
    }
