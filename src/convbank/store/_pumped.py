"""A query's work on a helper thread, waited for where Python takes a signal (:func:`pumped`):
what DuckDB computes in a call Ctrl-C cannot reach runs there, and the main thread's wait
ends at once on a signal, the helper interrupted and waited for before it goes on."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import suppress
from typing import Any, TypeVar

import duckdb

from convbank._workers import taken

__all__ = ["pumped"]

T = TypeVar("T")


def pumped(con: duckdb.DuckDBPyConnection, items: Iterator[T]) -> Iterator[T]:
    """``items``, computed on a helper thread while this (main) thread waits where Python
    can take a signal: Ctrl-C interrupts DuckDB and raises :class:`KeyboardInterrupt` here
    at once, where a call into DuckDB would hold it until the query ended."""
    handoff: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce() -> None:
        try:
            try:
                for item in items:
                    while not stop.is_set():
                        try:
                            handoff.put(("item", item), timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
            finally:  # closed by the thread that runs it, never while it runs, before its end is said
                _close(items)
            handoff.put(("end", None))
        except BaseException as exc:  # handed to the caller
            handoff.put(("error", exc))

    worker = threading.Thread(target=produce, name="convbank-sql", daemon=True)
    try:
        worker.start()  # within the try: a signal as it starts still waits for the helper below
        while True:
            kind, value = taken(handoff)  # a wait Ctrl-C ends at once
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        if worker.is_alive():  # Ctrl-C, or the caller left early: stop DuckDB, free the helper
            stop.set()
            while worker.is_alive():  # interrupted again each turn: one sent before its query began is lost
                with suppress(duckdb.Error):
                    con.interrupt()
                with suppress(queue.Empty):  # a helper waiting to hand over goes on
                    handoff.get_nowait()
                worker.join(0.05)  # over as soon as the helper is (after its end: at once)
        if worker.ident is None:  # never started (a signal as it started): nothing runs it
            _close(items)


def _close(items: Iterator[Any]) -> None:
    """Close ``items`` where it has a ``close`` (a generator: its deadline timer cancelled, its
    result let go). :func:`pumped`'s helper closes what it ran as it ends: closed from the
    waiting thread, a generator the helper still ran at interpreter exit said ``ValueError:
    generator already executing`` (2 of 24 scripts that left a ``sql_batches`` unfinished)."""
    close = getattr(items, "close", None)
    if close is not None:
        close()
