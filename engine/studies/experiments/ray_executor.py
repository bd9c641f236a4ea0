"""Ray as the executor: each job is a Ray task on a local instance (``num_cpus``) or a
cluster (``address``); one :class:`~engine.studies.experiments.ratelimit.RateLimit` actor is shared
by every worker, so LLM calls stay under one budget of calls per second; the runs' LLM calls
are reported through one Ray queue (engine/studies/experiments/relay.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import SocialsimError
from .executor import POLL, Done, Job
from .ratelimit import RateLimit
from .relay import Listener, drain


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SocialsimError(
            "--executor ray needs Ray: pip install -e '.[ray]' (or pip install ray)"
        ) from None
    return ray


def _call(fn: Callable[..., Any], args: tuple[Any, ...], limit: Any, reports: Any) -> Any:
    """Body of a Ray task: the job, its LLM calls under the shared limit and reported."""
    if limit is not None:
        from .ratelimit import install

        install(lambda: limit.reserve.remote())
    if reports is not None:
        from . import relay

        relay.install(reports)
    return fn(*args)


class RayExecutor:
    """Jobs as Ray tasks (see the module docstring); Ctrl+C cancels what has not finished."""

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        calls_per_second: float | None = None,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.calls_per_second = calls_per_second

    def _init(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": "ERROR",
        }
        if self.address:
            options["address"] = self.address
        else:
            options["num_cpus"] = self.num_cpus
        ray.init(**options)

    def run(
        self,
        jobs: Sequence[Job],
        done: Done,
        stop: threading.Event | None = None,
        calls: Listener | None = None,
    ) -> None:
        if not jobs:
            return
        ray = _ray()
        self._init(ray)
        limit: Any = None
        reports: Any = None
        if self.calls_per_second:
            limit = ray.remote(RateLimit).remote(self.calls_per_second)
        if calls is not None:
            from ray.util.queue import Queue

            reports = Queue()
        task = ray.remote(_call)
        refs = {task.remote(job.fn, job.args, limit, reports): i for i, job in enumerate(jobs)}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1, timeout=POLL)
                if calls is not None:
                    drain(reports, calls)
                for ref in ready:
                    done(refs[ref], ray.get(ref))
                if stop is not None and stop.is_set():
                    raise KeyboardInterrupt
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise
        finally:
            if calls is not None:
                drain(reports, calls)
                reports.shutdown()
