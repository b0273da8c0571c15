"""What a forked child must not inherit as it was: a lock another thread of the parent held
at the fork stays locked for ever in the child (the thread that would release it is not
there), so a ``DataLoader`` worker forked while a thread read a corpus hung at its first
read. An object registers its locks with :func:`renew_after_fork`; in a child of
``os.fork`` (``multiprocessing``'s fork, ``DataLoader`` workers, convbank's own forked
workers) each is replaced by a new one before the child runs on. What a lock guards is
left as it was: convbank's locks guard caches and counters that each operation leaves
whole under the GIL.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["renew_after_fork", "this_process_only"]

_OWNERS: dict[int, tuple[weakref.ref[Any], dict[str, Callable[[], Any]]]] = {}
"""Each registered owner (by its id), a weak reference to it, and its attributes to renew."""


def renew_after_fork(owner: Any, **attributes: Callable[[], Any]) -> None:
    """In a forked child, set each of ``owner``'s ``attributes`` to a new value made by its
    factory (``renew_after_fork(self, _lock=threading.Lock)``), for as long as ``owner``
    lives. A module may register itself (``sys.modules[__name__]``).

    >>> import threading
    >>> class Cache:
    ...     def __init__(self):
    ...         self._lock = threading.Lock()
    ...         renew_after_fork(self, _lock=threading.Lock)
    >>> cache = Cache()
    >>> _ = cache._lock.acquire()  # held by some thread when a fork comes
    >>> _renew()  # what a forked child runs
    >>> cache._lock.locked()
    False
    """
    key = id(owner)

    def gone(_: weakref.ref[Any], key: int = key) -> None:
        _OWNERS.pop(key, None)

    _OWNERS[key] = (weakref.ref(owner, gone), attributes)


def _renew() -> None:
    """Give every registered owner new locks (run in a forked child, before it goes on)."""
    for ref, attributes in list(_OWNERS.values()):
        owner = ref()
        if owner is not None:
            for name, make in attributes.items():
                setattr(owner, name, make())


@contextmanager
def this_process_only() -> Iterator[None]:
    """Run someone else's code (a model's ``predict``): a process it forks that leaves the
    block, by returning or raising, ends there (``os._exit(0)``, its buffers unwritten) rather
    than go on with convbank's work: a child that returned from ``predict`` went on to score,
    print and save the run as its own (a model forking in each of 5 folds saved 32 runs).

    >>> with this_process_only():
    ...     pid = os.getpid()
    >>> pid == os.getpid()
    True
    """
    pid = os.getpid()
    try:
        yield
    finally:
        if os.getpid() != pid:
            os._exit(0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew)
