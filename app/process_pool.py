"""The process pool of the batch commands (`triage`, `cases rediagnose`), which leaves no
process behind.

Forked where the platform can fork (what the parent loaded is copied, not redone), spawned
elsewhere. Every process is reaped by its parent, also when the run is interrupted:

- a pool process ignores Ctrl-C (the parent handles it for the whole pool) and ends its
  engine children before a SIGTERM ends it (engine/worker.py `exit_by_signal`); when it
  ends normally, multiprocessing ends and reaps them (they are daemon processes);
- in the parent, leaving the `with` block by an exception (KeyboardInterrupt, or SIGTERM,
  raised here as `Terminated`) cancels what is queued, terminates the pool processes and
  reaps them; a SIGTERM then ends the parent as SIGTERM does (its exit status says so).
"""

from __future__ import annotations

import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable


class Terminated(BaseException):
    """SIGTERM arrived while the pool ran (a BaseException, like KeyboardInterrupt: no
    `except Exception` of an item swallows it)."""

    def __init__(self, signum: int):
        super().__init__(f"ended by signal {signum}")
        self.signum = signum


def _raise_terminated(signum, frame) -> None:
    raise Terminated(signum)


def _start_pool_process(initializer: Callable[..., None] | None, initargs: tuple) -> None:
    from j6doctor.engine.worker import exit_by_signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, exit_by_signal)  # the parent stops the pool: engine children first
    if initializer is not None:
        initializer(*initargs)


class ProcessPool:
    """`with ProcessPool(jobs, initializer, initargs) as executor:` a ProcessPoolExecutor
    (see the module docstring)."""

    def __init__(self, jobs: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()):
        self.jobs = jobs
        self.initializer = initializer
        self.initargs = initargs
        self._executor: ProcessPoolExecutor | None = None
        self._before: set[Any] = set()
        self._previous_sigterm: Any = None

    def __enter__(self) -> ProcessPoolExecutor:
        import multiprocessing

        if threading.current_thread() is threading.main_thread():
            self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        self._before = set(multiprocessing.active_children())
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        self._executor = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context(method),
                                             initializer=_start_pool_process,
                                             initargs=(self.initializer, self.initargs))
        return self._executor

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if kind is None:
                self._executor.shutdown(wait=True)
            else:
                self._stop()
        finally:
            if self._previous_sigterm is not None:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
        if isinstance(error, Terminated):
            from j6doctor.engine.worker import exit_by_signal

            exit_by_signal(error.signum)

    def _stop(self) -> None:
        """Stop now, without waiting for the tasks in progress: nothing more is started, the
        pool processes are terminated (each ends its engine children first) and reaped."""
        import multiprocessing

        self._executor.shutdown(wait=False, cancel_futures=True)
        started = [p for p in multiprocessing.active_children() if p not in self._before]
        for process in started:
            process.terminate()
        for process in started:
            process.join(5)
            if process.is_alive():  # stuck in C code (an inline engine), where no handler runs
                process.kill()
                process.join()
