"""What every command shares: one-line errors, invoking the typer app, the save store, the
console, running a coroutine (SIGTERM stops it like Ctrl+C), the run and saves parameters."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Coroutine
    from types import FrameType

    from rich.console import Console

    from engine import SaveStore, Simulation

T = TypeVar("T")


def folder(value: str) -> Path:
    """A path option (``--saves``, ``--out``): not an empty string (which would mean the
    current folder)."""
    if not value.strip():
        raise typer.BadParameter("an empty path (it would mean the current folder)")
    return Path(value)


def out_file(value: str) -> Path:
    """A file option (``--out FILE.csv``) checked before any work: a regular file or a new
    one, in a folder that exists."""
    path = folder(value)
    if path.is_dir():
        raise typer.BadParameter("a folder; give a file")
    if path.exists() and not path.is_file():
        raise typer.BadParameter("not a regular file")
    if not path.parent.is_dir():
        raise typer.BadParameter(f"no folder {str(path.parent)!r}")
    return path


SavesOpt = Annotated[
    Path | None,
    typer.Option(
        "--saves",
        parser=folder,
        metavar="<path>",
        help="Saves folder [default: $SOCIALSIM_SAVES or ./saves].",
    ),
]
RunArg = Annotated[str, typer.Argument(help="Run id (see `socialsim list`).")]


def output_format(value: str) -> str:
    """``--format``: one of the output formats (``output.FORMATS``)."""
    from .output import FORMATS

    if value not in FORMATS:
        raise typer.BadParameter(f"choose from {', '.join(FORMATS)}")
    return value


FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        parser=output_format,
        metavar="<format>",
        help="table, csv, tsv, json or markdown (tables are never cut, also when piped).",
    ),
]


def say(message: str) -> None:
    """One line ``socialsim: ...`` on stderr (control characters and line breaks escaped)."""
    from engine.core.textsafe import one_line

    typer.echo(f"socialsim: {one_line(message)}", err=True)


def fail(message: str) -> NoReturn:
    """One clear line on stderr, exit code 2."""
    say(f"error: {message}")
    raise typer.Exit(2)


def usage_message(err: typer.TyperException, args: list[str] | None = None) -> str:
    """A typer/click usage error (a bad value, an unknown option or command) as one line;
    a bad option value is quoted as given in ``args``."""
    ctx = getattr(err, "ctx", None)
    text = " ".join(err.format_message().split()).rstrip(".")
    given = _given(getattr(err, "param", None), args or [])
    if given is not None:
        opt, value = given
        message = " ".join(str(getattr(err, "message", "")).split()).rstrip(".")
        text = f"{opt} {value!r}: {message}"
    if ctx is None:
        return text
    path = ctx.command_path
    where = path.removeprefix("socialsim").strip()
    return f"{where + ': ' if where else ''}{text} (see {path} --help)"


def _given(param: object, args: list[str]) -> tuple[str, str] | None:
    """(option, value) as the command line gave the option ``param`` (its last use)."""
    if getattr(param, "param_type_name", None) != "option":
        return None
    found = None
    names = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
    for k, arg in enumerate(args):
        if arg == "--":
            break
        for name in names:
            if arg == name and k + 1 < len(args):
                found = (name, args[k + 1])
            elif name.startswith("--") and arg.startswith(f"{name}="):
                found = (name, arg[len(name) + 1 :])
    return found


#: Holds True once the command has said why it stopped (:func:`run_async`), so that
#: :func:`invoke` does not say "interrupted" again.
_stop_said: set[bool] = set()


def invoke(app: typer.Typer, args: list[str]) -> int:
    """Run the typer ``app`` on ``args`` and return the exit code; engine errors and usage
    errors print one line and give 2."""
    from engine.errors import SocialsimError

    _stop_said.clear()
    try:
        code = app(args=args, prog_name="socialsim", standalone_mode=False)
    except SocialsimError as err:
        say(f"error: {err}")
        return 2
    except typer.Abort:
        say("aborted")
        return 1
    except typer.TyperException as err:
        say(f"error: {usage_message(err, args)}")
        return 2
    if code == 130 and not _stop_said:  # typer's answer to a KeyboardInterrupt
        say("interrupted")
    return code if isinstance(code, int) else 0


def open_store(saves: Path | None) -> SaveStore:
    """The saves folder ``--saves`` names (default: $SOCIALSIM_SAVES or ./saves)."""
    from engine import SaveStore

    store = SaveStore(saves)
    if store.root.exists() and not store.root.is_dir():
        fail(f"saves folder {store.root} is a file, not a folder (--saves, $SOCIALSIM_SAVES)")
    return store


def outside_saves(out: Path | None, store: SaveStore | None = None) -> None:
    """Refuse an ``--out`` inside the saves folder (``store``'s, else the default one):
    outputs never land on a run (:meth:`~engine.saves.store.SaveStore.check_outside`)."""
    if out is not None:
        (store or open_store(None)).check_outside(out)


def tidy(store: SaveStore, run_ids: list[str] | None = None) -> None:
    """Remove what killed writers left in the saves folder (``.tmp`` files only in
    ``run_ids`` when given: the runs a command opens), one line each on stderr."""
    for path in store.clean_leftovers(run_ids):
        say(f"removed the leftover of an interrupted write: {path}")


def make_console(stderr: bool = False) -> Console:
    """A console that prints user text as it is (no highlighting, no ``:emoji:`` codes)
    and never writes a control character of the text it is given (old saves, file
    names): only its own styles reach the terminal. ``stderr``: it prints there (what
    surrounds a table printed as csv or json). A text of one line that fits the width is
    drawn as rich draws it, without rich's wrap (which gives back that same line)."""
    from collections.abc import Iterable

    from rich.cells import cell_len
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment
    from rich.text import Text

    from engine.core.textsafe import strip_controls

    def one_line(text: Text, options: ConsoleOptions) -> bool:
        plain = text.plain
        return (
            text.justify is None
            and options.justify is None
            and "\n" not in plain
            and "\t" not in plain
            and cell_len(plain) <= options.max_width
        )

    class PlainConsole(Console):
        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            if type(renderable) is Text and one_line(renderable, options or self.options):
                # (joined, as rich's wrap joins its lines: the text's style becomes a span)
                segments = Text("\n").join([renderable]).render(self, end=renderable.end)
            else:
                segments = super().render(renderable, options)
            for segment in segments:
                if segment.control is None and not segment.text.isprintable():
                    text = strip_controls(segment.text)  # (a printable text has none)
                    if text != segment.text:
                        segment = Segment(text, segment.style)
                yield segment

    return PlainConsole(highlight=False, emoji=False, stderr=stderr)


def saved_so_far(sim: Simulation) -> str:
    """Where an interrupted run stands: its last saved round, the exchanges of the next one
    kept in its journal, and how to go on."""
    where = f" in {sim.store.run_dir(sim.run_id)}" if sim.store is not None else ""
    kept = sim.journaled
    journaled = (
        f"; {kept} exchange{'s' * (kept != 1)} of round {sim.round + 1} kept for the next open"
        if kept
        else ""
    )
    return (
        f"run {sim.run_id} is saved up to round {sim.round}/{sim.total_rounds}{where}"
        f"{journaled}; socialsim resume {sim.run_id} continues it"
    )


class _Terminated:
    """While installed, SIGTERM acts as Ctrl+C (the round in flight is dropped, every
    finished round is already saved), or raises ``error`` when given, and is remembered,
    for the exit code 143."""

    def __init__(self, error: type[BaseException] | None = None) -> None:
        self.received = False
        self.error = error

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        if self.error is not None:
            raise self.error
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # asyncio's: cancel the main task; else raise KeyboardInterrupt
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt


@contextmanager
def sigterm_raises(error: type[BaseException]) -> Iterator[_Terminated]:
    """While inside (in the main thread), SIGTERM raises ``error``; the handler yielded
    says whether it came (``received``)."""
    terminated = _Terminated(error)
    if threading.current_thread() is not threading.main_thread():
        yield terminated
        return
    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield terminated
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Hold:
    """Ctrl+C or SIGTERM while an LLM run plays: the first holds the run (no new call) and
    ends it once its calls in flight are answered and journaled; a second ends it at once,
    abandoning them. Either way the play task is cancelled and the run's finished rounds
    are saved."""

    #: How often the calls in flight are looked at while waiting for them.
    POLL = 0.05

    def __init__(self, sim: Simulation, task: asyncio.Task[Any], terminated: _Terminated) -> None:
        self.sim, self.task, self.terminated = sim, task, terminated
        self.stopping = False
        self.waiter: asyncio.Task[None] | None = None

    def __call__(self, signum: int) -> None:
        self.terminated.received |= signum == signal.SIGTERM
        what = "terminated" if signum == signal.SIGTERM else "interrupted"
        if self.stopping:
            say(f"{what} again: abandoning the calls in flight")
            self.task.cancel()
            return
        self.stopping = True
        self.sim.hold()
        flying = self.sim.progress.now().in_flight
        if flying:
            again = "Ctrl+C again" if signum == signal.SIGINT else "a second SIGTERM"
            say(
                f"{what}: no new call; waiting for {flying} call{'s' * (flying > 1)} in flight "
                f"({again}: abandon them)"
            )
        self.waiter = self.task.get_loop().create_task(self._stop_when_answered())

    async def _stop_when_answered(self) -> None:
        import asyncio

        while self.sim.progress.now().in_flight:
            await asyncio.sleep(self.POLL)
        self.task.cancel()


def run_async(
    coro: Coroutine[Any, Any, T],
    interrupted: Callable[[], str] | None = None,
    holds: Simulation | None = None,
) -> T:
    """Run a coroutine, then close any LLM clients it opened (no unclosed-client warnings).
    Ctrl+C or SIGTERM ends it with one line (``interrupted()``: what is saved) and exit code
    130 or 143. ``holds``: the LLM run the coroutine plays, which the first Ctrl+C or SIGTERM
    holds until its calls in flight are answered (see :class:`_Hold`)."""
    import asyncio  # (not at import: commands that run no coroutine start faster without it)
    import threading

    terminated = _Terminated()

    async def main() -> T:
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        hooked = holds is not None and holds.meta.llm is not None and main_thread
        if hooked:
            assert holds is not None
            hold = _Hold(holds, task, terminated)
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, hold, signum)
        try:
            return await task
        except asyncio.CancelledError:
            if hooked and task.cancelled():
                raise KeyboardInterrupt from None
            raise
        finally:
            if hooked:
                for signum in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(signum)
                signal.signal(signal.SIGTERM, terminated)
                signal.signal(signal.SIGINT, signal.default_int_handler)
            from engine.llm.transport import close_clients

            await close_clients()

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        what = "terminated" if terminated.received else "interrupted"
        say(f"{what}; {interrupted()}" if interrupted else what)
        _stop_said.add(True)
        raise typer.Exit(143 if terminated.received else 130) from None
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
