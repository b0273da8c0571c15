"""A signal that lands anywhere in a query's wait is answered only once the helper thread
running DuckDB has stopped: the connection is then free to close and no thread of DuckDB
runs on as the interpreter exits (before: a Ctrl-C landing as the helper started left it
running, ``con.close()`` said ``connection is busy`` and, at exit, a thread still inside
DuckDB aborted the process, ``terminate called without an active exception``, -6)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import duckdb
import pytest

from convbank.store import _pumped, sql

SLOW = "SELECT count(*) FROM range(3000000000) t(i) WHERE md5(i::VARCHAR) > 'f'"
"""A query DuckDB's interrupt stops, that runs for minutes otherwise."""


class _SignalAsItStarts(threading.Thread):
    """A helper thread during whose start the signal lands (after the thread runs)."""

    def start(self) -> None:
        super().start()
        raise KeyboardInterrupt


def test_a_signal_as_the_query_helper_starts_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C landing as ``fetched``'s helper thread starts: the helper is interrupted and
    waited for before the KeyboardInterrupt goes on, interrupted again until it stops, as an
    interrupt sent before its query began is lost (before: the helper ran on, 2 of 100
    `report` runs Ctrl-C'd at 0.35-1.2 s, 2 of 45 made certain by a tracer; con.close()
    raised ResourceInUse; with the wait alone, the query ran to its end, 300 s)."""
    con = duckdb.connect()
    monkeypatch.setattr(sql.threading, "Thread", _SignalAsItStarts)
    with pytest.raises(KeyboardInterrupt):
        sql.fetched(con, SLOW)
    monkeypatch.undo()
    running = [t.name for t in threading.enumerate() if t.name == "convbank-sql"]
    con.close()  # before: connection is busy with another call
    assert running == []


def test_what_the_helper_runs_is_closed_by_the_helper() -> None:
    """The generator a query's helper thread runs is closed by that thread as it ends, never
    by the thread that waits: at interpreter exit the waiting side closed it while the helper
    still ran it, ``ValueError: generator already executing`` said by a script that left a
    ``sql_batches`` unfinished (before: 2 of 24 runs; closed here from the main thread)."""
    closed_by: list[str] = []

    def items() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            closed_by.append(threading.current_thread().name)

    pumped = _pumped.pumped(duckdb.connect(), items())
    assert next(pumped) == 0
    pumped.close()
    assert closed_by == ["convbank-sql"]
