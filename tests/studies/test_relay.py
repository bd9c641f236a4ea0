"""A Ctrl+C that cuts a read of the workers' report queue stops the reading: a manager's
connection left in the middle of a message made the next read wait for ever, while the
caller drained its running jobs (a trial's first Ctrl+C, under load, in CI)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from engine.studies.experiments.executor import collect
from engine.studies.experiments.relay import Drain


class Hung(BaseException):
    """A read that would have waited for ever."""


class CutQueue:
    """A report queue whose first read a Ctrl+C cuts in the middle."""

    def __init__(self) -> None:
        self.reads = 0

    def get_nowait(self) -> object:
        self.reads += 1
        if self.reads == 1:
            raise KeyboardInterrupt
        raise Hung


def test_a_read_cut_by_ctrl_c_is_the_last_and_the_running_jobs_still_finish() -> None:
    running: Future[str] = Future()
    running.set_running_or_notify_cancel()
    finish = threading.Timer(0.3, running.set_result, args=("done",))
    finish.start()
    queue, finished = CutQueue(), []
    try:
        with pytest.raises(KeyboardInterrupt):
            collect(
                {running: 0},
                lambda k, result: finished.append((k, result)),
                None,
                cancel=lambda: None,
                terminate=lambda: None,
                poll=Drain(queue, print),
            )
    finally:
        finish.cancel()
    assert finished == [(0, "done")] and queue.reads == 1
