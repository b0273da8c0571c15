"""Where a read-only query runs: in this process, or in a warm sandbox worker held to hard
limits (:mod:`convbank.store.sandbox`), kept for the life of the process so that a limit
costs milliseconds per call, not a process start.

Both stream: :func:`stream` yields, for each statement, a :class:`~convbank.store.sql.Begin`
and then its result in Arrow batches, so that no result is ever held whole unless the
caller collects it.
"""

from __future__ import annotations

import atexit
import numbers
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from convbank._arguments import a_flag
from convbank._forksafe import renew_after_fork
from convbank.errors import NotBuiltError, QueryError, whole_number
from convbank.store.bank import Bank, Snapshot
from convbank.store.sandbox import SqlSandbox, parse_size
from convbank.store.sql import BATCH_ROWS, Begin, connect, results

__all__ = ["close_sandboxes", "memory_bytes", "stream"]

_SANDBOX_WORKERS = 4
"""Workers a process keeps per bank and memory limit (more calls at once wait)."""
_sandboxes: dict[tuple[Path, int], SqlSandbox] = {}
_lock = threading.Lock()
# a forked child starts its own workers: the parent's are the parent's to use and end
renew_after_fork(sys.modules[__name__], _lock=threading.Lock, _sandboxes=dict)


def memory_bytes(memory_limit: str) -> int:
    """Bytes of a memory limit (``"512MB"``); a one-line :class:`QueryError` otherwise, for
    a limit that is not text too (before: ``memory_limit=5`` was ``AttributeError: 'int'
    object has no attribute 'upper'``)."""
    if not isinstance(memory_limit, str):
        raise QueryError(
            f"memory limit: {memory_limit!r:.40} is not a size such as '512MB' or '2GB' (text)",
            limit=memory_limit,
        )
    try:
        return parse_size(memory_limit)
    except ValueError as exc:
        raise QueryError(f"memory limit: {exc}", limit=memory_limit) from None


def _sandbox(root: Path, memory: int) -> SqlSandbox:
    with _lock:
        sandbox = _sandboxes.get((root, memory))
        if sandbox is None:
            sandbox = _sandboxes[(root, memory)] = SqlSandbox(
                root, workers=_SANDBOX_WORKERS, memory=memory, fork=True
            )
        return sandbox


@atexit.register
def close_sandboxes() -> None:
    """End this process's warm query workers (at exit; a later call starts new ones)."""
    with _lock:
        sandboxes = list(_sandboxes.values())
        _sandboxes.clear()
    for sandbox in sandboxes:
        sandbox.close()


MOST_BATCH_ROWS = 2**63 - 1
"""The most rows a batch is asked for (DuckDB's count is 64 bits): a larger ``batch_rows``
asks for this many, which no result reaches."""


def _check_time(query: str, timeout: object) -> None:
    """Refuse a time limit that is not a positive, finite number of seconds (a bool, a
    string, ``nan``) in one line, as :class:`QueryError`."""
    real = isinstance(timeout, numbers.Real) and not isinstance(timeout, bool)
    if timeout is not None and not (real and 0 < timeout < float("inf")):  # type: ignore[operator]
        raise QueryError(
            f"a time limit is a positive number of seconds, not {timeout!r}", sql=query, limit=timeout
        )


def a_bank_or_none(value: Any, name: str = "bank") -> Any:
    """``value`` if it is a :class:`Bank` (``snapshot``: a :class:`Snapshot`) or None; else a
    one-line :class:`TypeError` naming the argument, before any work (before: a path given
    as ``bank`` was ``AttributeError: 'str' object has no attribute 'snapshot'``)."""
    bank = name == "bank"
    kind, spelled = (Bank, "a convbank.store.Bank (Bank(path))") if bank else (Snapshot, "a Snapshot")
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} is {spelled}, not {type(value).__name__} {value!r:.80}")
    return value


def stream(
    query: str,
    *,
    bank: Bank | None = None,
    snapshot: Snapshot | None = None,
    timeout: float | None = None,
    memory_limit: str | None = None,
    hard: bool = True,
    batch_rows: int = BATCH_ROWS,
    last_only: bool = False,
) -> Iterator[Begin | pa.RecordBatch]:
    """Run read-only ``query`` over the bank, streaming (see :func:`convbank.store.sql.results`).

    With ``timeout`` (seconds) or ``memory_limit`` and ``hard``, the query runs in a warm
    worker process that the operating system holds to them (its address space capped,
    killed at the deadline, then replaced); without ``hard``, in this process, held by
    DuckDB (its ``memory_limit`` and an interrupt at the deadline: cheaper, and enough for
    SQL that is not written to escape them). Without either, in this process, unlimited.
    """
    _check_time(query, timeout)
    bank, snapshot = a_bank_or_none(bank), a_bank_or_none(snapshot, "snapshot")
    hard, last_only = a_flag(hard, "hard"), a_flag(last_only, "last_only")
    batch_rows = min(whole_number(batch_rows, "batch_rows", least=1), MOST_BATCH_ROWS)
    memory = memory_bytes(memory_limit) if memory_limit else 0
    if hard and (timeout or memory):
        pinned = snapshot or (bank or Bank()).snapshot()
        try:
            if not pinned.tables():
                raise NotBuiltError(
                    f"the bank at {pinned.bank.root} is empty; run `convbank build` first",
                    path=pinned.bank.root,
                )
            sandbox = _sandbox(pinned.bank.root, memory)
            yield from sandbox.results(
                pinned, query, timeout=timeout, batch_rows=batch_rows, last_only=last_only
            )
        finally:
            if snapshot is None:
                pinned.close()
        return
    con = connect(snapshot or bank or Bank(), memory_limit=f"{max(memory // 1024, 1)}KiB" if memory else None)
    try:
        yield from results(con, query, timeout=timeout, batch_rows=batch_rows, last_only=last_only)
    finally:
        con.close()
