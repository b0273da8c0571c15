"""What a model's code may change of the process, put back after each call into it: the
working folder, convbank's own variables (``CONVBANK_*``), the umask, ``sys.stdin``,
``sys.stdout`` and ``sys.stderr``, and the handlers of SIGINT, SIGTERM and SIGHUP; and what
it prints goes to stderr, so that stdout holds convbank's output alone (``--json``)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress

__all__ = ["kept", "stdout_to_stderr"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a run (:mod:`convbank.cli._signals`): a model that ignores them for
its own code never makes the rest of the run unstoppable."""


@contextmanager
def kept() -> Iterator[None]:
    """Run the model's code, then put back what it may have changed of the process (above)."""
    with ExitStack() as stack:
        stack.enter_context(_same_folder())
        stack.enter_context(_same_settings())
        stack.enter_context(_printing_to_stderr())
        yield


@contextmanager
def _same_folder() -> Iterator[None]:
    """Keep the working folder the model's code found: a model that changes it (``os.chdir``)
    never moves where the run writes what it was given as a relative path (``--write-predictions
    out.jsonl``, a relative ``CONVBANK_HOME``). The folder is held open (``O_PATH``: no right
    to read it needed) and gone back to even if it was renamed meanwhile."""
    try:
        fd = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # a working folder that cannot be opened: nothing to go back to
        yield
        return
    try:
        yield
    finally:
        with suppress(OSError):
            os.fchdir(fd)
        os.close(fd)


@contextmanager
def _same_settings() -> Iterator[None]:
    """Put back convbank's variables (a model setting ``CONVBANK_HOME`` never makes the run
    read or save in another bank), the umask (a run's saved file is never made unreadable),
    the standard streams' objects and the stopping signals' handlers. The model's other
    variables stay, for its own later calls."""
    ours = {k: v for k, v in os.environ.items() if k.startswith("CONVBANK_")}
    mask = os.umask(0o022)
    os.umask(mask)
    streams = (sys.stdin, sys.stdout, sys.stderr)
    main = threading.current_thread() is threading.main_thread()
    handlers = [(s, signal.getsignal(s)) for s in _SIGNALS] if main else []
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("CONVBANK_") and k not in ours]:
            del os.environ[key]
        for key, value in ours.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        os.umask(mask)
        sys.stdin, sys.stdout, sys.stderr = streams
        for signum, handler in handlers:
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)


@contextmanager
def _printing_to_stderr() -> Iterator[None]:
    """What the model prints, through ``print`` or to file descriptor 1 (a library in C, a
    subprocess), goes to stderr: stdout holds convbank's output alone, never a line the
    model forged into ``bench --json``. Nothing is redirected where either stream is closed."""
    saved = stdout_to_stderr()
    if saved is None:
        yield
        return
    out, sys.stdout = sys.stdout, sys.stderr
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError, AttributeError):
                stream.flush()
        os.dup2(saved, 1)
        os.close(saved)
        if sys.stdout is sys.stderr:
            sys.stdout = out


def stdout_to_stderr() -> int | None:
    """Flush ``sys.stdout`` (what was written before, first, in its order), then point file
    descriptor 1 at stderr's file: a copy of the descriptor 1 before, to write or go back to,
    or None where either cannot be done (nothing changed)."""
    with suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return None
    return saved
