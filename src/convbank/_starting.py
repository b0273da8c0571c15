"""The ``convbank`` script's first milliseconds: SIGINT, SIGTERM and SIGHUP end it with the
signal's one line and exit code before anything else of convbank is imported.

:mod:`convbank` runs :func:`guard` as its first line, and this module imports nothing but
what the interpreter has loaded before any code runs (``os``, ``sys``) and the builtin
``_signal``: the script's handlers are set within a millisecond of its first line of
convbank's code (before: from ``convbank/__init__.py``'s imports, typing, pathlib, the
errors, through ``convbank.cli``'s, 26 ms in which SIGINT was a ``KeyboardInterrupt``
traceback and SIGTERM or SIGHUP ended the script silently). A library import (a notebook,
a test, ``python -m pytest``) sets nothing: only the ``convbank`` script and ``python -m
convbank`` are guarded.

:data:`received` records every signal convbank's handlers take, so that a command that
ended after one never exits 0: CPython ignores an exception raised in a weakref callback
(importlib's module lock drops its entry so), and a Ctrl-C landing there was said as
``Exception ignored in ...`` while the command ran to its end.
"""

import _signal  # type: ignore[import-not-found]  # signal without its enums
import os
import sys

__all__ = [
    "LINES",
    "STOPPED",
    "commanding",
    "guard",
    "is_script",
    "received",
    "record",
    "stop_if_signalled",
    "stop_while_starting",
    "while_starting",
]

LINES = {
    2: ("interrupted (Ctrl-C)", 130),
    15: ("terminated (SIGTERM)", 143),
    1: ("terminated (SIGHUP)", 129),
}
"""What stopped the command, and its exit code, by signal number (SIGINT, SIGTERM, SIGHUP):
:func:`convbank.cli._signals.message`'s, without importing the ``signal`` module."""

STOPPED = "stopped; nothing half-written was kept"
"""What every signal's line says after what stopped the command."""

received: list[int] = []
"""The signals convbank's handlers took in this process, in order."""


def record(signum: int) -> None:
    """Remember that ``signum`` arrived (the handler's first act, before it raises)."""
    received.append(signum)


commanding = [False]
"""Whether this process is the ``convbank`` script running its command (set by its
``main()``, as it clears :data:`received`)."""


def stop_if_signalled() -> None:
    """Raise :class:`KeyboardInterrupt` where the script's command took a signal: called
    before a file it writes replaces what was there, so that a command a signal stopped
    commits nothing, even where CPython dropped the signal's exception and the command ran
    on (before: ``report`` wrote its file, printed its path, then said ``stopped; nothing
    half-written was kept``). Nothing in any other process (a notebook, a test)."""
    if commanding[0] and received:
        raise KeyboardInterrupt


def while_starting(signum: int, frame: object) -> None:
    """A signal before the command's handlers are set: its line and exit code, at once
    (nothing is written yet)."""
    said, code = LINES[signum]
    try:  # noqa: SIM105 (contextlib is not imported yet)
        os.write(2, f"{said}: {STOPPED}\n".encode())
    except OSError:
        pass
    os._exit(code)


def is_script() -> bool:
    """Whether this process is the ``convbank`` script or ``python -m convbank``, as
    :mod:`convbank` is first imported. Example: ``is_script()`` is False under pytest."""
    argv = sys.argv
    if argv[:1] == ["-m"]:  # runpy imports the package of `python -m NAME` before NAME runs
        args = list(getattr(sys, "orig_argv", []))
        named = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-m"]
        return named[:1] == ["convbank"] or "-mconvbank" in args
    name = os.path.basename(argv[0]) if argv and argv[0] else ""
    return (
        name.removesuffix(".exe") == "convbank"
        and getattr(sys.modules.get("__main__"), "__spec__", 0) is None
    )


def _quiet_interrupts(unraisable: "sys.UnraisableHookArgs") -> None:
    """Say no ``Exception ignored in ...`` for a signal's exception that CPython had to
    drop (it is in :data:`received`, and the command's exit says it); others as Python does."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def guard() -> None:
    """In the ``convbank`` script only: SIGINT, SIGTERM and SIGHUP end the process with their
    line and exit code until :func:`convbank.cli._signals.terminate_on_signals` replaces the
    handlers, and a signal's dropped exception is not said. Example: first in
    ``convbank/__init__.py``."""
    if not is_script():
        return
    sys.unraisablehook = _quiet_interrupts
    stop_while_starting()


def stop_while_starting() -> None:
    """Until :func:`convbank.cli._signals.terminate_on_signals` replaces them, SIGINT, SIGTERM
    and SIGHUP end the process with their one line and exit code (:func:`while_starting`),
    where their handlers are still Python's own (off the main thread: nothing). Example: the
    first call of :func:`guard` and of the ``convbank`` script's ``main()``."""
    for signum in LINES:
        try:
            if _signal.getsignal(signum) in (_signal.SIG_DFL, _signal.default_int_handler):
                _signal.signal(signum, while_starting)
        except (ValueError, OSError):
            pass
