"""What a simulation keeps between its LLM calls: the gate that holds the run (no new
call), the journal of the round's exchanges (``engine/llm/journal.py``), and what the run
found of its servers (each model's structured mode and system role), saved and restored."""

from __future__ import annotations

from pathlib import Path

from ..llm.journal import Journal
from ..llm.progress import Calls
from ..minds import Mind
from ..minds.base import Resumable, TalksToServers
from ..saves.runmeta import RunMeta
from .events import Notice, SimEvent


class Holding:
    """The run-control half of :class:`~engine.round.simulation.Simulation` that deals with
    calls: hold, release, and the journal of the round in play."""

    progress: Calls
    mind: Mind
    meta: RunMeta
    _journal: Journal | None = None

    @property
    def run_id(self) -> str:
        raise NotImplementedError

    @property
    def round(self) -> int:
        raise NotImplementedError

    def _emit(self, event: SimEvent) -> None:
        raise NotImplementedError

    def _save_meta(self) -> None:
        raise NotImplementedError

    def hold(self) -> None:
        """Send no new LLM call from now on, mid-round included; thread-safe (the app's UI
        thread may call it while the engine thread plays the round).

        A call already sent runs on and finishes (answered or failed, after its retries),
        and its exchange is journaled as every answered one is; each call not yet sent
        waits until :meth:`release`, one queued for a slot of the in-flight limit too (the
        transport looks at the gate again once it has its slot). The round itself is
        neither ended nor saved: once its in-flight calls are done
        (``progress.now().in_flight == 0``, read once every answer is journaled) the task
        playing it may be cancelled (quit) with nothing answered lost, or the run released
        to go on. Only a call that passed its last look at the gate in the microseconds
        before ``hold`` still goes out. Holding an offline run changes nothing (it sends no
        calls). Stays held across rounds until released; ``progress.now().held`` says it.
        """
        self.progress.gate.hold()

    def release(self) -> None:
        """Let the calls held by :meth:`hold` go out, and new ones after them; thread-safe.
        A no-op when not held."""
        self.progress.gate.release()

    @property
    def held(self) -> bool:
        """True between :meth:`hold` and :meth:`release` (any thread may read it)."""
        return self.progress.gate.held

    @property
    def journaled(self) -> int:
        """The exchanges of the round in play kept in the run's journal: served again,
        without asking the server, when the round is played (this process or the next
        open). 0 for an offline or unsaved run, and after each saved round."""
        return self._journal.kept if self._journal is not None else 0

    def _open_journal(self, mind: Mind, meta: RunMeta, folder: Path | None) -> None:
        """Start ``mind`` from what the saved run found of its servers, and journal its
        exchanges in the run's folder (a saved LLM run's)."""
        if not isinstance(mind, Resumable):
            return
        mind.settle(dict(meta.structured_modes), dict(meta.system_roles), dict(meta.server_slots))
        journal = Journal(folder) if folder is not None else None
        if journal is not None and mind.keep_journal(journal):
            self._journal = journal
            journal.begin(self.round + 1)

    def _begin_journal(self) -> None:
        """The next round is played: serve its journaled exchanges (to this run's mind,
        should a branch share it) and say the journal's damaged lines."""
        journal = self._journal
        if journal is None or not isinstance(self.mind, Resumable):
            return
        self.mind.keep_journal(journal)
        journal.begin(self.round + 1)
        for line in journal.notes:
            self._emit(Notice(run_id=self.run_id, round=self.round + 1, message=line))
        journal.notes.clear()

    def _note_structured_modes(self) -> None:
        """Save how each model is asked for structured replies (what ``--structured auto``
        settled on), where its system text goes and its server's slots, when a round changed
        them."""
        mind, meta = self.mind, self.meta
        modes = mind.structured_modes()
        roles = mind.system_roles() if isinstance(mind, TalksToServers) else {}
        found = mind.server_slots() if isinstance(mind, TalksToServers) else {}
        slots = {**meta.server_slots, **found}
        if (modes, roles, slots) != (meta.structured_modes, meta.system_roles, meta.server_slots):
            update = {"structured_modes": modes, "system_roles": roles, "server_slots": slots}
            self.meta = self.meta.model_copy(update=update)
            self._save_meta()

    def _drop_journal(self) -> None:
        """The round in play is saved: its journal goes."""
        if self._journal is not None:
            self._journal.drop()
