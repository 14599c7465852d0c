"""The rule engine behind a wall: durable-rules (or CLIPS) runs in a worker process.

durable-rules' C code can loop forever holding the GIL (no Python timeout can stop it),
read out of bounds or crash the process. A diagnosis therefore runs in a long-lived child
process that registers each rule base once and serves many runs (batch use pays one
process start, not one per case); the parent waits with a wall-clock timeout and the child
has a memory cap. A timeout kills the child, a crash is seen as its death: both become an
EngineLimitError naming what to simplify, never a hang or a signal. The next run starts a
fresh child.

The child is a multiprocessing process: forked where the platform can fork (a copy of the
parent, no imports to redo, talking through two plain pipes, _PipeChannel), spawned
elsewhere. It is a daemon process: it never outlives its parent, and multiprocessing ends
and reaps it when its parent is a multiprocessing process that ends (a triage pool
process). In the main process the shared worker is closed at exit (atexit), and a SIGTERM
that would end the process ends and reaps the child first (exit_by_signal).
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import sys
import threading
from typing import Any, NamedTuple

from j6doctor.engine.errors import EngineRunError

DEFAULT_TIMEOUT = 60.0  # seconds of one diagnosis; a normal one takes milliseconds
DEFAULT_MEMORY_MB = 2048  # address space the worker may add to what it starts with; a diagnosis needs ~50 MB


class EngineLimitError(EngineRunError):
    """The engine did not finish within its time or memory, or its process died: the rule
    base (or the facts given to it) is beyond what the engine can run."""


class Limits(NamedTuple):
    """The wall-clock timeout and memory cap of the engine's process."""

    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB

    @classmethod
    def from_environment(cls) -> "Limits":
        """J6DOCTOR_ENGINE_TIMEOUT (seconds) and J6DOCTOR_ENGINE_MEMORY_MB override the defaults."""
        def number(name: str, default: float) -> float:
            try:
                value = float(os.environ.get(name, default))
            except ValueError:
                return default
            return value if value > 0 else default
        return cls(number("J6DOCTOR_ENGINE_TIMEOUT", DEFAULT_TIMEOUT),
                   int(number("J6DOCTOR_ENGINE_MEMORY_MB", DEFAULT_MEMORY_MB)))


def _mapped_bytes() -> int:
    """The address space this process maps now (Linux: /proc/self/statm; 0 where unknown)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _cap_memory(memory_mb: int) -> None:
    """Cap the address space at what the child maps already plus `memory_mb`. A forked child
    inherits its parent's mappings (thread stacks and math-library buffers of a large
    process count, several GB on a many-core machine), so a cap that ignored them could sit
    below what the child already has and fail the first allocation of a tiny diagnosis."""
    try:
        import resource

        cap = _mapped_bytes() + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # no RLIMIT_AS here (e.g. Windows): the timeout still holds
        pass


def _serve(conn, memory_mb: int) -> None:
    """The child: register rule bases on first use, run diagnoses, answer each request;
    return at the end of input (the parent closed its end, or died)."""
    _cap_memory(memory_mb)
    from j6doctor.engine.runtime import program_for, run

    known: dict[str, tuple[Any, Any]] = dict(_INHERITED)  # a forked child has them already
    # one copy of each vocabulary, however many rule bases arrive with it (a process that loads
    # many rule bases over one vocabulary would otherwise keep a copy per rule base)
    vocabularies: dict[Any, Any] = {_vocabulary_key(v): v for _, v in known.values()}
    for compiled, vocab in known.values():  # registered while the parent reads the inputs
        try:
            program_for(compiled, vocab)
        except Exception:  # reported by the first run, which registers again
            pass
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent closed the pipe, or died: nothing left to do
            return
        fingerprint, compiled, vocab, facts, limits = request  # fingerprint: (engine, rule base)
        try:
            if compiled is not None:
                known[fingerprint] = (compiled, vocabularies.setdefault(_vocabulary_key(vocab), vocab))
            compiled, vocab = known[fingerprint]
            answer = ("ok", run(compiled, vocab, facts, **limits))
        except MemoryError:
            answer = ("memory", None)
        except Exception as exc:  # an EngineRunError, or a durable-rules error: reported, never raised here
            answer = ("error", f"{type(exc).__name__}: {exc}" if not isinstance(exc, EngineRunError) else str(exc))
        try:
            conn.send(answer)
        except (OSError, ValueError):
            return


def _vocabulary_key(vocab) -> Any:
    """What tells a vocabulary from another: its fingerprint (a vocabulary built without one is
    its own)."""
    return vocab.fingerprint or id(vocab)


class EngineWorker:
    """One child process serving runs, restarted after a timeout or a crash."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits.from_environment()
        self._process = None  # a multiprocessing.Process
        self._conn = None
        self._stderr = -1  # the read end of a forked child's fd 2 (-1: none)
        self._sent: set[str] = set()  # fingerprints the current child knows
        self._lock = threading.Lock()

    def _start(self) -> None:
        import multiprocessing

        if "fork" in multiprocessing.get_all_start_methods():
            # A forked child starts with the rule bases registered so far: nothing to send.
            self._process, self._conn, self._stderr = _start_forked(self.limits.memory_mb)
            self._sent = set(_INHERITED)
            return
        context = multiprocessing.get_context("spawn")  # no fork here (Windows): sent each rule base
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child, self.limits.memory_mb), daemon=True,
                                  name=WORKER_NAME)
        process.start()
        child.close()
        self._process, self._conn, self._sent = process, parent, set()

    def _ready(self, compiled, vocab) -> None:
        """A running child (started now if there is none)."""
        if self._process is None or not self._process.is_alive():
            self.stop()
            _INHERITED.setdefault(f"{compiled.engine}:{compiled.fingerprint}", (compiled, vocab))
            self._start()

    @property
    def pid(self) -> int | None:
        """The running child's process id (None before the first run or after a stop)."""
        return self._process.pid if self._process is not None and self._process.is_alive() else None

    def stop(self) -> None:
        """Kill the child (if it runs) and reap it."""
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        if self._stderr >= 0:
            os.close(self._stderr)
        self._process = self._conn = None
        self._stderr = -1
        self._sent = set()

    def warm_up(self, compiled, vocab) -> None:
        """Start the child now, so that it registers the rule base while this process reads
        the inputs (a forked child registers what it inherits before its first request)."""
        with self._lock:
            self._ready(compiled, vocab)

    def close(self, timeout: float = 5.0) -> None:
        """End the child the quiet way: its input closes, it returns, it is reaped (so its
        time is accounted to this process); killed only if it does not end in time."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._process is not None and _readable_within(self._process.sentinel, timeout):
                # it has ended: reaped at once (a join with a timeout would import
                # multiprocessing.connection and its dependencies, a tenth of a cold run)
                self._process.join()
            self.stop()

    def run(self, compiled, vocab, facts, *, what: str = "the rule base", **limits):
        with self._lock:
            self._ready(compiled, vocab)
            try:
                status, payload = self._exchange(compiled, vocab, facts, what, limits)
            except BaseException:  # Ctrl-C while the child works: its answer would come to no one
                if self._process is not None:
                    self.stop()
                raise
        if status == "ok":
            return payload
        if status == "memory":
            self.stop()
            raise EngineLimitError(self._out_of_memory(what, compiled))
        raise EngineRunError(payload)

    def _exchange(self, compiled, vocab, facts, what: str, limits: dict) -> tuple[str, Any]:
        """Send one run to the child and wait for its answer, within the time limit."""
        key = f"{compiled.engine}:{compiled.fingerprint}"
        fresh = key not in self._sent
        try:
            self._conn.send((key, compiled if fresh else None, vocab if fresh else None, facts, limits))
        except (OSError, ValueError):
            raise EngineLimitError(self._crash(what, compiled)) from None
        self._sent.add(key)
        if not self._conn.poll(self.limits.timeout):
            self.stop()
            raise EngineLimitError(
                f"the rule engine did not finish within {self.limits.timeout:g} s on {what}: a rule "
                "probably joins many facts of one type with each other (three or more conditions on "
                "the same type) or tests hundreds of values"
                f"{_suspects(compiled)}; simplify those rules "
                "(J6DOCTOR_ENGINE_TIMEOUT raises the limit)")
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise EngineLimitError(self._crash(what, compiled)) from None

    def _out_of_memory(self, what: str, compiled) -> str:
        return (f"the rule engine ran out of its {self.limits.memory_mb} MB on {what}: a rule probably "
                f"matches too many combinations of facts{_suspects(compiled)}; simplify it "
                "(J6DOCTOR_ENGINE_MEMORY_MB raises the limit)")

    def _c_output(self) -> bytes:
        """What a forked child wrote on its stderr (the C engines' messages), up to 64 KiB."""
        if self._stderr < 0:
            return b""
        try:
            return os.read(self._stderr, 65536)
        except OSError:  # nothing written (would block)
            return b""

    def _crash(self, what: str, compiled) -> str:
        """Why the child died: an allocation its C code could not make under the memory cap
        (CLIPS says `[MEMORY1] Out of memory` on its stderr and exits), or another crash."""
        said = self._c_output()
        self.stop()
        if b"Out of memory" in said or b"MemoryError" in said:
            return self._out_of_memory(what, compiled)
        return _crashed(what, compiled.engine)


def _suspects(compiled) -> str:
    """The rules most likely behind a timeout or the memory cap, named with their file and
    line: the open joins `rules lint` warns about (engine/join_growth.py)."""
    from j6doctor.engine.join_growth import suspects

    return suspects(compiled.rules)


def _crashed(what: str, engine: str) -> str:
    if engine == "durable":
        return (f"the rule engine (durable-rules, C code) crashed on {what}: a rule probably exceeds one of "
                "its fixed tables; run `j6doctor rules lint` on the packs and simplify the rules it names")
    return (f"the rule engine ({engine}, C code) crashed on {what}; run `j6doctor rules lint` on the packs "
            "and simplify the rules it names")


WORKER_NAME = "j6doctor-engine"
_WORD = 8  # bytes of the length before each pickled message on a pipe


class _PipeChannel:
    """One end of a forked child's pair of pipes, with the part of multiprocessing's
    Connection the worker uses: send / recv a pickled object, poll, close."""

    def __init__(self, read_fd: int, write_fd: int):
        self._read, self._write = read_fd, write_fd

    def send(self, obj: Any) -> None:
        if self._write < 0:
            raise OSError("the channel is closed")
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(len(data).to_bytes(_WORD, "little") + data)
        while view:
            view = view[os.write(self._write, view):]  # BrokenPipeError (an OSError) when the other end is gone

    def _exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = os.read(self._read, min(left, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> Any:
        if self._read < 0:
            raise OSError("the channel is closed")
        return pickle.loads(self._exactly(int.from_bytes(self._exactly(_WORD), "little")))

    def poll(self, timeout: float) -> bool:
        """Whether a message (or the end of input) can be read within `timeout` seconds."""
        return _readable_within(self._read, timeout)

    def close(self) -> None:
        for fd in (self._read, self._write):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._read = self._write = -1


def _readable_within(fd: int, timeout: float) -> bool:
    """Whether `fd` can be read (data, its end, or a process sentinel's child gone) within
    `timeout` seconds."""
    import select

    if not hasattr(select, "poll"):  # Windows: a sentinel is a handle there
        from multiprocessing.connection import wait

        return bool(wait([fd], timeout))
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(0, int(timeout * 1000))))


def _start_forked(memory_mb: int):
    """A forked child serving on two pipes: (process, the parent's channel, the read end of
    the child's stderr)."""
    import multiprocessing

    to_child, from_parent = os.pipe()[::-1]
    to_parent, from_child = os.pipe()[::-1]
    # The child's fd 2 goes to a pipe the parent reads after a crash: a C engine's dying
    # words (CLIPS's out-of-memory) become the message, not stray text on the user's
    # terminal. Non-blocking on the child's side: a full pipe drops text, never stalls.
    err_read, err_write = os.pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_serve_forked, name=WORKER_NAME, daemon=True,
        args=(from_parent, to_parent, err_write, (to_child, from_child, err_read), memory_mb))
    process.start()
    for fd in (from_parent, to_parent, err_write):
        os.close(fd)
    os.set_blocking(err_read, False)
    return process, _PipeChannel(from_child, to_child), err_read


def _serve_forked(read_fd: int, write_fd: int, err_fd: int, parent_ends: tuple[int, ...], memory_mb: int) -> None:
    """The forked child: the parent's ends of the pipes closed (its death is then an end of
    input here), stderr to the parent's pipe, Ctrl-C left to the parent (which ends this
    child by closing its pipe or killing it), SIGTERM ending it at once even inside C code
    (not through a handler copied from the parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for fd in parent_ends:
        os.close(fd)
    os.set_blocking(err_fd, False)
    os.dup2(err_fd, 2)
    os.close(err_fd)
    _serve(_PipeChannel(read_fd, write_fd), memory_mb)


def live_children() -> list:
    """The engine children of this process that are running now (multiprocessing's
    handles: pid, name, is_alive, kill, join); finished ones are reaped on the way."""
    if "multiprocessing" not in sys.modules:  # no child was ever started here
        return []
    import multiprocessing

    return [child for child in multiprocessing.active_children() if child.name == WORKER_NAME]


def end_children() -> None:
    """Kill and reap this process's engine children now. Safe in a signal handler: it takes
    no lock the interrupted code may hold."""
    for child in live_children():
        child.kill()
        child.join(2)


def exit_by_signal(signum: int, frame=None) -> None:
    """A signal handler for a signal that ends the process (SIGTERM): end and reap the
    engine children, then end as the signal's default action does (its exit status says
    which signal), without running exit handlers that could wait on a busy child."""
    end_children()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


_WORKER: EngineWorker | None = None
# Rule bases a child started by fork finds in its copy of this process (not pickled through
# the pipe). Only those known when a child starts; later ones are sent on first use.
_INHERITED: dict[str, tuple[Any, Any]] = {}
_WORKER_LOCK = threading.Lock()


def close_shared_worker() -> None:
    """Stop the shared worker, if one was started (at exit, and when a command ends)."""
    with _WORKER_LOCK:
        worker = _WORKER
    if worker is not None:
        worker.close()


def shared_worker() -> EngineWorker:
    """The worker every diagnosis of this process uses; created on first use, closed at
    exit. In the main thread of a process whose SIGTERM still ends it at once, SIGTERM
    first ends and reaps the child (exit_by_signal)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = EngineWorker()
            atexit.register(close_shared_worker)
            if (threading.current_thread() is threading.main_thread()
                    and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
                signal.signal(signal.SIGTERM, exit_by_signal)
        return _WORKER


def _forget_shared_worker() -> None:
    """In a forked child (a pool process): the parent's worker is the parent's; this
    process starts its own on first use (under a lock of its own: another thread of the
    parent may have held the parent's when it forked)."""
    global _WORKER, _WORKER_LOCK
    _WORKER = None
    _WORKER_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_shared_worker)
