"""A Ctrl+C or SIGTERM that comes while the workers' reports are read acts once they are
read: one that cut a read of a manager's queue in the middle left its connection in the
middle of a message, and the next read waited for ever while the caller drained its
running jobs (a trial's first Ctrl+C, under load, in CI)."""

from __future__ import annotations

import os
import queue
import signal
from collections.abc import Iterator

import pytest

from engine.studies.experiments.relay import Report, drain


class SignalledQueue:
    """Reports, the first read of which a signal to this process interrupts."""

    def __init__(self, reports: list[Report], signum: int) -> None:
        self.reports, self.signum, self.reads = list(reports), signum, 0

    def get_nowait(self) -> Report:
        self.reads += 1
        if self.reads == 1:
            os.kill(os.getpid(), self.signum)  # (its Python handler runs at the next line)
        if not self.reports:
            raise queue.Empty
        return self.reports.pop(0)


class Stopped(Exception):
    """What a SIGTERM handler raises, as the command line's does."""


@pytest.fixture
def sigterm_stops() -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    yield
    signal.signal(signal.SIGTERM, previous)


def reports(n: int) -> list[Report]:
    return [Report(f"run-{k}", 2, None) for k in range(n)]


def test_a_ctrl_c_during_a_read_acts_once_every_report_is_read() -> None:
    source, got = SignalledQueue(reports(3), signal.SIGINT), []
    with pytest.raises(KeyboardInterrupt):
        drain(source, got.append)
    assert [r.run for r in got] == ["run-0", "run-1", "run-2"] and source.reads == 4
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_sigterm_during_a_read_goes_to_its_handler_once_every_report_is_read(
    sigterm_stops: None,
) -> None:
    source, got = SignalledQueue(reports(2), signal.SIGTERM), []
    with pytest.raises(Stopped):
        drain(source, got.append)
    assert len(got) == 2 and source.reads == 3


def test_reports_read_without_a_signal_raise_nothing() -> None:
    got: list[Report] = []
    drain(SignalledQueue(reports(2), 0), got.append)  # (signal 0: none is sent)
    assert len(got) == 2
