"""Worker processes that never re-run the caller's script.

``multiprocessing``'s spawn and forkserver start methods import the caller's ``__main__``
in every child, so a script that calls ``convbank.build()`` without an
``if __name__ == "__main__":`` guard would start itself again. convbank's workers are plain
``python -c`` processes instead, told which function to run, talking over a socket pair
with ``multiprocessing.connection`` (pickled messages, length-prefixed).
"""

from __future__ import annotations

import importlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from convbank._version import __version__

T = TypeVar("T")

__all__ = [
    "Worker",
    "ctrl_c_said",
    "forbid_fork",
    "kill_all",
    "map_in_order",
    "may_fork",
    "received",
    "resolved",
    "serve_calls",
    "taken",
    "upgraded",
]

_BOOT = "import sys; from convbank._workers import _boot; _boot(sys.argv[1:])"

_OF = "CONVBANK_WORKER_OF"
"""The environment variable that tells a new worker the version of the convbank that started it."""

_ALIVE: weakref.WeakSet[Worker] = weakref.WeakSet()
"""Every worker this process started and has not killed, for :func:`kill_all`."""

_UNFORKABLE = threading.Event()
"""Set by :func:`forbid_fork`: a worker is then started anew rather than forked."""

ORPHAN_CHECK = 0.1
"""Seconds between a worker's checks that the process that started it still lives."""

WAKE = 0.05
"""Seconds at most that a wait of the calling thread lasts before Python may act on a signal."""


def taken(handoff: queue.Queue[T]) -> T:
    """The next item of ``handoff``, waited for in steps of :data:`WAKE` seconds, so that
    Ctrl-C raises :class:`KeyboardInterrupt` at once: a library that installs its SIGINT
    handler with ``SA_RESTART`` (polars does, at import) makes a wait without a timeout
    resume after the signal, and Python acts on it only once the wait ends (before:
    ``convbank.sql()`` in a process that had imported polars ran its query to the end, 9 s,
    after Ctrl-C).

    >>> items: queue.Queue[int] = queue.Queue()
    >>> items.put(1)
    >>> taken(items)
    1
    """
    while True:
        with suppress(queue.Empty):
            return handoff.get(timeout=WAKE)


def resolved(future: Future[T]) -> T:
    """The result of ``future``, waited for as :func:`taken` waits (its exception raised)."""
    while not futures_wait([future], timeout=WAKE).done:
        pass
    return future.result()


@contextmanager
def ctrl_c_said() -> Iterator[None]:
    """Ctrl-C as Python says it, around DuckDB's calls on the calling thread: DuckDB, seeing
    the signal, stops its query and raises ``RuntimeError('Query interrupted')`` in place of
    Python's :class:`KeyboardInterrupt`, which a caller's ``except Exception`` would take for
    a failure and go on (before: ``Corpus.to_arrow()``, ``turns_with_labels()`` and
    ``convbank.stats.stats()`` said so, exit 1, at 1 of 2 signals); and where the signal
    came while DuckDB called into Python (reading a registered Arrow object's schema), its
    ``InvalidInputException: ... failed: KeyboardInterrupt``.

    >>> with ctrl_c_said():  # another failure is as it was
    ...     raise RuntimeError("Conversion Error")
    Traceback (most recent call last):
    RuntimeError: Conversion Error
    """
    try:
        yield
    except Exception as exc:
        said = str(exc)
        if (isinstance(exc, RuntimeError) and said.startswith("Query interrupted")) or (
            type(exc).__module__ == "_duckdb" and said.endswith("failed: KeyboardInterrupt: ")
        ):  # the second: Ctrl-C while DuckDB called into Python (an Arrow object's schema)
            raise KeyboardInterrupt from None
        raise


def received(connection: Connection) -> Any:
    """The next message of ``connection``, waited for as :func:`taken` waits; a worker that
    runs another convbank than this process (:func:`upgraded`) is a :class:`SetupError`."""
    while not connection.poll(WAKE):
        pass
    message = connection.recv()
    line = upgraded(message)
    if line is not None:
        from convbank.errors import SetupError

        raise SetupError(line)
    return message


def upgraded(message: Any) -> str | None:
    """The one line said when a worker's first message is that it runs another convbank than
    this process (another version installed since this process started: a long ``serve``),
    which would not speak its protocol; ``None`` for any other message.

    >>> print(upgraded(("upgraded", "9.9")))  # doctest: +ELLIPSIS
    a worker process started now runs convbank '9.9', this process convbank ...; start it again
    >>> upgraded(("ready",)) is None
    True
    """
    if not (isinstance(message, tuple) and len(message) == 2 and message[0] == "upgraded"):
        return None
    return (
        f"a worker process started now runs convbank {str(message[1])[:40]!r}, this process convbank "
        f"{__version__!r}: another convbank was installed since this process started; start it again"
    )


def kill_all() -> None:
    """Kill every worker of this process with its process group, at once (a command line that
    must exit now: SIGTERM, SIGHUP, Ctrl-C). Example: ``kill_all()`` before ``os._exit(143)``."""
    for worker in list(_ALIVE):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.process.pid, signal.SIGKILL)
        worker.process.kill()


def _die_with(parent: int) -> None:  # pragma: no cover - runs in the worker
    """In a worker: end this process as soon as ``parent`` is no longer its parent (it died,
    even by SIGKILL, and the worker was handed to init), whatever the worker is doing (a
    thread that wakes every :data:`ORPHAN_CHECK` seconds; DuckDB releases the GIL)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK)
        os._exit(1)

    threading.Thread(target=watch, name="convbank-orphan-check", daemon=True).start()


def forbid_fork() -> None:
    """Tell :func:`may_fork` that this process holds something a forked child would inherit
    broken: the caller's layer says so (:func:`convbank.store.sql.connect`, before it opens a
    DuckDB database, whose threads hold locks a child would inherit locked); this module
    never looks upwards for it. Example: ``forbid_fork()``; then ``may_fork()`` is False."""
    _UNFORKABLE.set()


def may_fork() -> bool:
    """Whether a worker may be forked from this process rather than started anew: on Linux,
    with no other Python thread and nothing opened here that :func:`forbid_fork` was told of
    (a DuckDB database). The native threads of NumPy's OpenBLAS, Arrow and jemalloc take part
    in ``fork`` (their ``pthread_atfork`` handlers). Example: ``Worker(t, fork=may_fork())``."""
    return (
        sys.platform == "linux"
        and threading.active_count() == 1
        and not _UNFORKABLE.is_set()
        and hasattr(os, "fork")
    )


class _Forked:
    """The ``Popen`` calls :class:`Worker` makes, for a forked child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.005)
        return self.returncode or 0


class Worker:
    """A process running ``target(connection, *args)`` (``target`` as ``"module:function"``):
    a new interpreter, or with ``fork`` (see :func:`may_fork`) a fork of this one, which has
    imported what the target needs already (milliseconds instead of a second)."""

    def __init__(self, target: str, *args: str, fork: bool = False) -> None:
        parent, child = socket.socketpair()
        if fork:
            module, _, name = target.partition(":")
            function = getattr(importlib.import_module(module), name)
            sys.stdout.flush()
            sys.stderr.flush()
            owner = os.getpid()
            with warnings.catch_warnings():  # Python 3.12+ counts the native threads above
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:  # pragma: no cover - the child: never returns into the caller's code
                code = 0
                try:
                    parent.close()
                    _die_with(owner)
                    os.setpgid(0, 0)  # as process_group=0: a terminal's Ctrl-C reaches the owner
                    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                    function(Connection(child.detach()), *args)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            child.close()
            self.process: subprocess.Popen[bytes] | _Forked = _Forked(pid)
            self.connection = Connection(os.dup(parent.fileno()))
            parent.close()
            _ALIVE.add(self)
            return
        try:  # the version in the environment: a worker of a convbank before this one runs as it did
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(os.getpid()), str(child.fileno()), target, *args],
                env={**os.environ, _OF: __version__},
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                process_group=0,  # a terminal's Ctrl-C reaches the owner, which kills its workers
            )
        finally:
            child.close()
        self.connection = Connection(os.dup(parent.fileno()))
        parent.close()
        _ALIVE.add(self)

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def kill(self) -> None:
        """End the process at once."""
        _ALIVE.discard(self)
        if self.alive():
            self.process.kill()
        self.process.wait(10)
        self.connection.close()


def _boot(argv: list[str]) -> None:  # pragma: no cover - runs in the worker
    """A new worker's start: it runs ``target`` only if it is the convbank of the process
    that started it; else it says its version as its first message (:func:`upgraded`) and ends,
    quietly: the caller says it in one line."""
    parent, fd, target = int(argv[0]), int(argv[1]), argv[2]
    _die_with(parent)
    if os.environ.pop(_OF, __version__) != __version__:
        Connection(fd).send(("upgraded", __version__))
        return
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    function(Connection(fd), *argv[3:])


def serve_calls(connection: Connection) -> None:  # pragma: no cover - runs in the worker
    """A worker's loop for :func:`map_in_order`: receive ``(function, argument)``, send back
    ``("ok", result)`` or ``("error", exception)``, until the connection closes."""
    while True:
        try:
            target, argument = connection.recv()
        except (EOFError, OSError):
            return
        module, _, name = target.partition(":")
        try:
            reply: tuple[str, Any] = ("ok", getattr(importlib.import_module(module), name)(argument))
        except Exception as exc:  # sent back whole: the caller raises it
            reply = ("error", exc)
        try:
            connection.send(reply)
        except Exception as exc:  # an unpicklable exception or result
            connection.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def ended(worker: Worker) -> str:
    """How a worker that stopped answering ended, as its process says once it is gone:
    ``with exit code 0`` (code that called ``os._exit(0)``), ``killed by SIGKILL``; ``still
    running`` where it has not ended within a second (it is killed with the others)."""
    try:
        code = worker.process.wait(1)
    except subprocess.TimeoutExpired:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"with exit code {code}"


def map_in_order(function: Callable[[Any], Any], arguments: Iterable[Any], workers: int) -> Iterator[Any]:
    """``function(argument)`` for each argument, computed by ``workers`` processes, results
    yielded in the order of the arguments; each worker holds one task at a time, so at most
    ``workers`` results wait. ``function`` must be a module-level function."""
    target = f"{function.__module__}:{function.__qualname__}"
    importlib.import_module(function.__module__)  # what a forked worker needs is then imported
    fork = may_fork()  # forked: milliseconds a worker, not an interpreter's start and imports
    pool = [Worker("convbank._workers:serve_calls", fork=fork) for _ in range(max(1, workers))]
    free = deque(pool)
    running: deque[Worker] = deque()
    todo = iter(arguments)

    def hand_out() -> None:
        while free:
            try:
                argument = next(todo)
            except StopIteration:
                return
            worker = free.popleft()
            worker.connection.send((target, argument))
            running.append(worker)

    try:
        hand_out()
        while running:
            worker = running.popleft()
            try:
                status, value = received(worker.connection)
            except (EOFError, OSError):
                said = ended(worker)
                raise RuntimeError(f"a worker process ended without answering, {said} ({target})") from None
            if status == "error":
                raise value
            free.append(worker)
            hand_out()  # the worker goes on while the caller uses this result
            yield value
    finally:
        for worker in pool:
            worker.kill()
