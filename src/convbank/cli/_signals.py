"""Ctrl-C on the command line: stop at once, whatever runs.

Python runs its SIGINT handler (the :class:`KeyboardInterrupt`) only between bytecodes, so a
DuckDB query running in C would go on for as long as it takes. The operating system's
signal also reaches a wake-up file descriptor at once, though: a watcher thread reading it
interrupts every DuckDB connection of the process, DuckDB returns, and the
:class:`KeyboardInterrupt` follows. Worker processes (the query sandbox, build workers) are
killed by their owners as the exception unwinds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "Terminated",
    "interrupted",
    "sigterm_as_interrupt",
    "watch_interrupts",
]

EXIT_INTERRUPTED = 130
"""A shell's code for a command ended by SIGINT (128 + 2)."""
EXIT_TERMINATED = 143
"""A shell's code for a command ended by SIGTERM (128 + 15)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as Ctrl-C's :class:`KeyboardInterrupt` is, so that the same cleanup runs
    (an export's staging folder removed)."""


def _terminate(signum: int, frame: object) -> None:
    _interrupt_queries()
    raise Terminated


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
"""Set once SIGINT arrived: an error that follows is its consequence (an interrupted query)."""


def _interrupt_queries() -> None:
    interrupted.set()
    sql = sys.modules.get("convbank.store.sql")  # nothing to interrupt if never imported
    if sql is not None:
        sql.interrupt_all()


def _watch(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data or signal.SIGTERM in data:  # SIGTERM: within sigterm_as_interrupt
            _interrupt_queries()


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
