"""Ctrl-C on the command line: stop at once, whatever runs.

Python runs its SIGINT handler (the :class:`KeyboardInterrupt`) only between bytecodes, so a
DuckDB query running in C would go on for as long as it takes. The operating system's
signal also reaches a wake-up file descriptor at once, though: a watcher thread reading it
interrupts every DuckDB connection of the process, DuckDB returns, and the
:class:`KeyboardInterrupt` follows. Worker processes (the query sandbox, build workers) are
killed by their owners as the exception unwinds, and die by themselves when their owner dies
(:func:`convbank._workers._die_with`).

SIGTERM and SIGHUP stop every command as Ctrl-C does (:class:`Terminated`, exit 143 and 129).
DuckDB's interrupt cannot stop one huge expression (``md5(repeat('a', 10^9))`` runs on for
tens of seconds), so a read-only command (``query``) also sets :func:`exit_soon_on_signals`:
a signal not unwound within :data:`GRACE` seconds kills the workers and ends the process
(nothing is being written that could be left half-done).
"""

from __future__ import annotations

import _thread
import contextlib
import importlib.machinery
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from convbank._starting import LINES, STOPPED, commanding, received, record, while_starting

__all__ = [
    "EXIT_HUNG_UP",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "GRACE",
    "Terminated",
    "claim_exit",
    "exit_soon_on_signals",
    "interrupted",
    "last_exit",
    "message",
    "new_command",
    "settled",
    "signal_of",
    "signals_only",
    "sigterm_as_interrupt",
    "terminate_on_signals",
    "watch_interrupts",
]

EXIT_INTERRUPTED = 130
"""A shell's code for a command ended by SIGINT (128 + 2)."""
EXIT_TERMINATED = 143
"""A shell's code for a command ended by SIGTERM (128 + 15)."""
EXIT_HUNG_UP = 129
"""A shell's code for a command ended by SIGHUP (128 + 1): its terminal closed."""
GRACE = 0.5
"""Seconds a read-only command has to unwind after a signal before it is ended outright."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised as Ctrl-C's :class:`KeyboardInterrupt` is, so that the same
    cleanup runs (an export's staging folder removed); ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminate(signum: int, frame: FrameType | None) -> None:
    record(signum)
    if _deferred(signum, frame):
        return
    _interrupt_queries(signum)
    raise Terminated(signum)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C's handler: :class:`KeyboardInterrupt`, as Python's own raises it, once no C
    extension is being initialised (:func:`_deferred`)."""
    record(signum)
    if not _deferred(signum, frame):
        raise KeyboardInterrupt


def _in_extension_init(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside the initialisation of a C extension module (``import
    duckdb`` creating its enums): an exception raised there by a signal handler is fatal to
    some binding libraries (nanobind: ``Critical nanobind error``, the process aborted)."""
    while frame is not None:
        if frame.f_code.co_name in ("create_module", "exec_module") and isinstance(
            frame.f_locals.get("self"), importlib.machinery.ExtensionFileLoader
        ):
            return True
        frame = frame.f_back
    return False


def _deferred(signum: int, frame: FrameType | None) -> bool:
    """Whether the signal waits: raised in the main thread (:func:`_thread.interrupt_main`)
    once the C extension whose initialisation it arrived in is loaded."""
    if not _in_extension_init(frame):
        return False

    def again() -> None:
        main = threading.main_thread().ident
        while main is not None and _in_extension_init(sys._current_frames().get(main)):
            time.sleep(0.01)
        _thread.interrupt_main(signal.Signals(signum))

    threading.Thread(target=again, name="convbank-signal-deferred", daemon=True).start()
    return True


_EXIT = threading.Lock()
"""Taken by whoever prints the command's last line (the unwinding, or the grace timer)."""
_SOON = threading.Event()


def new_command() -> None:
    """A command starts in this process (a second one in a test or a notebook, after one was
    interrupted): the claim on its last line is its own. Example: ``new_command()`` first in
    the command group's ``invoke``."""
    global _EXIT  # noqa: PLW0603 (one claim per command, not per process)
    _EXIT = threading.Lock()
    interrupted.clear()  # an earlier command's signal is not this one's


def claim_exit() -> bool:
    """Whether this caller is the one to print the interrupted command's line and exit (once
    per process): the unwinding main thread or the :data:`GRACE` timer, whichever comes first.
    Example: ``if claim_exit(): click.echo("interrupted ...", err=True)``."""
    return _EXIT.acquire(blocking=False)


def exit_soon_on_signals() -> None:
    """For a command that writes nothing: after SIGINT, SIGTERM or SIGHUP, if it has not exited
    within :data:`GRACE` seconds, kill its workers and end it with the signal's exit code and
    one line. Example: ``exit_soon_on_signals()`` at the start of ``convbank query``."""
    _SOON.set()


def signal_name(signum: int) -> str:
    """How a line names the signal that stopped a command: ``Ctrl-C`` for SIGINT, else its
    name. Example: ``signal_name(signal.SIGTERM) == "SIGTERM"``."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def stopped_by(signum: int) -> str:
    """What a line says stopped the command, and how. Example:
    ``stopped_by(signal.SIGINT) == "interrupted (Ctrl-C)"``."""
    return f"{'interrupted' if signum == signal.SIGINT else 'terminated'} ({signal_name(signum)})"


def message(signum: int) -> tuple[str, int]:
    """The one line a command stopped by ``signum`` prints, and its exit code. Example:
    ``message(signal.SIGHUP) == ("terminated (SIGHUP): stopped; nothing half-written was
    kept", 129)``."""
    said, code = LINES[int(signum)]
    return f"{said}: {STOPPED}", code


def signal_of(exc: KeyboardInterrupt) -> int:
    """The signal a :class:`KeyboardInterrupt` stands for: a :class:`Terminated`'s own, else
    the last one that arrived (DuckDB raises its own for an interrupted query), else SIGINT.
    Example: ``message(signal_of(exc))`` in an ``except KeyboardInterrupt as exc``."""
    if isinstance(exc, Terminated):
        return exc.signum
    return last_signal[0] if interrupted.is_set() else int(signal.SIGINT)


@contextlib.contextmanager
def signals_only() -> Iterator[None]:
    """Around the script's command: a :class:`KeyboardInterrupt` that no signal sent (none of
    convbank's handlers took one and the watcher saw none: code raised it, convbank's, a
    library's or a plugin's) is the fault it is, a :class:`RuntimeError` with its traceback,
    never said as Ctrl-C (before: any such one was ``interrupted (Ctrl-C)``, exit 130, as
    pass 21 saw once of ``stats`` under ``ulimit -v``). In any other process (a notebook, a
    test) every one is Ctrl-C: Python's own handler raises it unrecorded."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if not commanding[0] or received or interrupted.is_set():
            raise
        fault = RuntimeError("a KeyboardInterrupt was raised with no signal sent (a fault, not Ctrl-C)")
        raise fault.with_traceback(exc.__traceback__) from None


def _end_now(signum: int) -> None:
    from convbank._workers import kill_all

    kill_all()
    if claim_exit():
        line, code = message(signum)
        with contextlib.suppress(OSError):
            os.write(2, f"{line}\n".encode())
        os._exit(code)


def terminate_on_signals() -> None:
    """From the main thread: SIGTERM and SIGHUP raise :class:`Terminated` (unless a handler of
    the program's own is set), SIGINT :class:`KeyboardInterrupt` as Python's handler does;
    either waits while a C extension module is initialised (:func:`_deferred`). Example:
    ``terminate_on_signals()`` in ``main()``."""
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(ValueError, OSError):
        if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, while_starting):
            signal.signal(signal.SIGINT, _interrupt)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signum) in (signal.SIG_DFL, while_starting):
                signal.signal(signum, _terminate)


def settled() -> None:
    """From the main thread, once the command is over (its last line printed, its exit code
    chosen): SIGINT, SIGTERM and SIGHUP are ignored, so that a signal during the interpreter's
    shutdown cannot end the process silently by the signal in place of the command's exit
    code. Example: ``settled()`` in ``main()``'s ``finally``."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, signal.SIG_IGN)


def last_exit(late: KeyboardInterrupt, said: Callable[[int], int]) -> SystemExit:
    """The process's exit when ``late``, a signal, landed in the script's ``main()`` after
    the command ended and before :func:`settled` set the signals aside (before: a traceback,
    the process ended by the signal): settled now, then the command's own exit where it had
    chosen one (the signal came after its last line, so it is ignored, as one a moment later
    is), else the signal's line and code (``said(signum)`` prints it and gives the code)."""
    settled()
    chosen = late.__context__
    return chosen if isinstance(chosen, SystemExit) else SystemExit(said(signal_of(late)))


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """From the main thread: within the block, SIGTERM (``kill``, ``timeout``, a service
    manager) stops the command as Ctrl-C does: :class:`Terminated` unwinds it, cleaning up.
    Example: ``with sigterm_as_interrupt(): export(...)``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


interrupted = threading.Event()
"""Set once SIGINT (or SIGTERM, SIGHUP) arrived: an error that follows is its consequence
(an interrupted query); :data:`last_signal` says which."""
last_signal = [int(signal.SIGINT)]


def _interrupt_queries(signum: int) -> None:
    last_signal[0] = signum
    interrupted.set()
    sql = sys.modules.get("convbank.store.sql")  # nothing to interrupt if never imported
    interrupt_all = getattr(sql, "interrupt_all", None)  # None while the module is half-imported
    if interrupt_all is not None:
        interrupt_all()


_OURS = (_terminate, _interrupt, signal.default_int_handler)
"""The handlers that stop a command: a signal another handler takes is not the watcher's."""


def _watch(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signum in data and signal.getsignal(signum) in _OURS:
                _interrupt_queries(signum)
                if _SOON.is_set():
                    timer = threading.Timer(GRACE, _end_now, (signum,))
                    timer.daemon = True
                    timer.start()


def watch_interrupts() -> None:
    """From the main thread: on SIGINT, interrupt every running DuckDB query of this process
    (the :class:`KeyboardInterrupt` is then raised as usual)."""
    if threading.current_thread() is not threading.main_thread():
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        threading.Thread(target=_watch, args=(read,), name="convbank-sigint", daemon=True).start()
