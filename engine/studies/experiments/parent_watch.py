"""Spawned processes that end with their parent: a worker or manager whose caller was
killed (SIGKILL included) must not live on under PID 1, nor keep the resource tracker alive."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading


def die_with_parent() -> None:
    """End this spawned process as soon as its parent is gone, however it ended: a thread
    waits on the pipe whose other end only the parent holds (it reads end-of-file when the
    parent dies). A no-op in a process that was not started by multiprocessing."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)  # the parent is gone: nobody is left to report to

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def serve_until_parent_dies() -> None:
    """The initializer of a manager process serving workers: it outlives a first Ctrl+C
    (the running jobs still use it), not its caller."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
