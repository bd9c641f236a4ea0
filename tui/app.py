"""The Textual app. :func:`build_app` is the one factory the CLI and the tests share.

The app holds what is app-wide (the :class:`~tui.session.Session`), quits safely and
closes the LLM clients; the run itself is shown and driven by :class:`MainScreen`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen

from engine import SaveStore, Scenario, Simulation, SocialsimError
from engine.core.textsafe import one_line
from engine.minds.human import check_players
from engine.minds.spec import OFFLINE, MindSpec

from . import heap, messages
from .keymap import keys_shown, load_keymap
from .screens.main import MainScreen, binding_ids
from .session import Session

if TYPE_CHECKING:
    from textual.timer import Timer

    from engine.studies.estimate import Estimate

DEFAULT_SCENARIO = "tavern"
#: The app's return code after SIGTERM (128 + 15, as a shell reports a process it ended).
TERMINATED = 143
#: How often a quit waiting for the calls in flight looks again (seconds).
QUIT_POLL = 0.1


class SocialsimApp(App[None]):
    """One run at a time, shown on the main screen; dialogs and other screens on top."""

    TITLE = "socialsim"
    ENABLE_COMMAND_PALETTE = True
    #: Dialogs are drawn on a plain background: Textual tints every cell of the screen
    #: behind a translucent one on each of its redraws (~100 ms at 160x48, docs/app.md).
    CSS = "ModalScreen { background: $background; }"

    def __init__(self, session: Session, spend: tuple[Estimate, str] | None = None) -> None:
        super().__init__()
        self.session = session
        self._quitting = False
        self._quit_timer: Timer | None = None
        #: The exchanges of the round in flight answered before quitting mid-round (kept
        #: for the next open); None: no round was stopped.
        self.kept: int | None = None
        #: The new run was deleted on quitting: no round was played, nothing named in it.
        self.discarded = False
        #: A new LLM run's estimate above ``--confirm-above`` (and the threshold): asked first.
        self.spend = spend
        #: When the last key or resize arrived (``time.monotonic()``).
        self.last_input = time.monotonic()
        if session.keymap:
            self.set_keymap(session.keymap)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A notification; its text (often an error quoting a file name or a reply) is one
        escaped line, never markup."""
        super().notify(
            one_line(message),
            title=one_line(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def on_mount(self) -> None:
        if self.spend is not None:  # cost before you spend: before the first call
            from .screens.spend import SpendScreen

            self.push_screen(SpendScreen(*self.spend), self._spend_answered)

    def _spend_answered(self, start: bool | None) -> None:
        if not start:
            self.exit()

    @property
    def sim(self) -> Simulation:
        """The open run."""
        return self.session.sim

    @property
    def main(self) -> MainScreen:
        """The main screen (the bottom of the screen stack)."""
        screen = self.default_screen
        assert isinstance(screen, MainScreen)
        return screen

    def get_default_screen(self) -> Screen:
        return MainScreen(self.session)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, MainScreen):
            return
        seen: set[str] = set()
        for binding in screen.BINDINGS:
            if not isinstance(binding, Binding) or binding.action in seen:
                continue
            seen.add(binding.action)
            shown = ", ".join(keys_shown(self, binding, self.session.keymap))
            action = binding.action
            # The palette matches a command's title: the tooltip's words are in it.
            title = binding.description
            if binding.tooltip:
                title += f": {binding.tooltip}"
            yield SystemCommand(
                title,
                f"{binding.tooltip or binding.description} (key: {shown})",
                lambda action=action: screen.run_action(action),
            )

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Resize):
            self.last_input = time.monotonic()
            # Input first: the engine thread gives way until the screen shows its effect.
            pacer = self.session.engine.pacer
            pacer.input_arrived()
            self.call_after_refresh(pacer.input_drawn)
        await super().on_event(event)

    def action_quit_safely(self) -> None:
        """Quit. An LLM round in flight sends no new call; once the calls in flight are
        answered the round stops, its answered exchanges kept for the next open (asked again:
        at once, the calls in flight abandoned). An offline round is finished and saved
        first (asked again: dropped, the save keeping the one before)."""
        if not self.main.running:
            self.exit()
        elif self.main.withdraw_turns():  # a round waiting for a person: asked again later
            self._quitting = True
        elif self._quitting:
            self._stop_round()
        elif self.sim.meta.llm is not None:
            self._quitting = True
            self.sim.hold()
            self._quit_timer = self.set_interval(QUIT_POLL, self._quit_when_answered)
            self._quit_when_answered()
        else:
            self._quitting = True
            self.sim.request_pause()
            self.notify("Finishing the current round, then quitting… (q again: quit now)")

    def _quit_when_answered(self) -> None:
        """Quitting mid-round: stop the round once no call is in flight (until then, say
        how many are)."""
        progress = self.sim.progress.now()
        if progress.in_flight:
            calls = "call" if progress.in_flight == 1 else "calls"
            self.clear_notifications()
            self.notify(
                f"Quitting: waiting for {progress.in_flight} {calls} in flight "
                f"({self.sim.journaled} answered, kept); q again: quit now."
            )
            return
        self._stop_round()

    def _stop_round(self) -> None:
        """Stop the round in flight: the exchanges answered so far are kept for the next
        open (the journal), the save keeps the rounds before."""
        if self._quit_timer is not None:
            self._quit_timer.stop()
            self._quit_timer = None
        if self.sim.journaled:
            self.kept = self.sim.journaled
        self.main.workers.cancel_group(self.main, "engine")

    @on(events.Mount)
    def _catch_sigterm(self) -> None:
        """SIGTERM (``kill``, a closing terminal session manager) quits at once as ``q``
        pressed twice does: the round in flight dropped, every finished round already saved,
        the terminal restored; the app's return code is then 143."""
        import asyncio
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._terminated)

    def _terminated(self) -> None:
        if self.main.running:
            self.main.workers.cancel_group(self.main, "engine")
        self.exit(return_code=TERMINATED)

    @on(events.Unmount)
    def _release_sigterm(self) -> None:
        import asyncio
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    @on(messages.RunStopped)
    def _quit_when_asked(self) -> None:
        if self._quitting:
            self.exit()

    async def on_unmount(self) -> None:
        engine = self.session.engine
        if engine.started:  # litellm's shared HTTP clients, on the loop that opened them
            from engine.llm.transport import close_clients  # with the LLM minds, not at start

            await engine.call(close_clients())
            engine.stop()
        self.sim.close()  # the lock last: no round is written any more
        try:
            self.discarded = self.session.discard_unplayed()
        except SocialsimError:  # unreadable now: kept, as any save socialsim cannot read
            self.discarded = False


def opened_scenario(target: str) -> tuple[Scenario, str]:
    """The scenario a target names and the reference saved with the run: a library id or a
    file, or a task id (``student-council`` or ``task:student-council``: an episode of the
    task in its Hetero casting, scored when its last round is played)."""
    from engine.studies.targets import open_target

    return open_target(target)


def build_app(
    target: str | None = None,
    *,
    mind: MindSpec = OFFLINE,
    seed: int = 0,
    saves: Path | None = None,
    keymap_file: Path | None = None,
    prior: str | None = None,
    spend: tuple[Estimate, str] | None = None,
    players: dict[str, str] | None = None,
    opened: tuple[Scenario, str] | None = None,
) -> SocialsimApp:
    """The app for a scenario (a new run) or a saved run id (resumed where it stopped).
    ``players`` (agent -> player's name) are people who play agents from the next round on,
    beside those the run already has. ``opened``: the scenario ``target`` names, already
    read (:func:`opened_scenario`), and its reference.

    ``spend``: the estimate of a new LLM run and the threshold it is above; the app asks
    before it plays.

    Raises :class:`engine.SocialsimError` with a clear message for bad input.
    """
    # Read the keymap first: a bad file must not leave a new, empty run behind.
    keymap = load_keymap(binding_ids(), keymap_file)
    store = SaveStore(saves)
    target = target or DEFAULT_SCENARIO
    fresh = None
    if store.exists_quietly(target):
        sim = Simulation.resume(target, store)
    else:
        from engine.core.priors import parse_prior

        scenario, ref = opened or opened_scenario(target)
        check_players(players or {}, scenario.names)  # before the run is created
        sim = Simulation.new(
            scenario,
            seed=seed,
            mind=mind,
            prior=parse_prior(prior, scenario.names) if prior else None,
            store=store,
            scenario_ref=ref,
        )
        fresh = sim.run_id
    if players:
        try:
            sim.play({**sim.meta.players, **players})
        except BaseException:
            sim.close()
            raise
    app = SocialsimApp(Session(store, sim, keymap, fresh=fresh), spend)
    heap.settle()  # the modules and the run read: out of the collector's walk
    return app
