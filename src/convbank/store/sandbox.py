"""Read-only SQL with hard limits: each query runs in a worker process whose address space
is capped (``RLIMIT_AS``) and which is killed at the deadline.

DuckDB's own ``memory_limit`` does not count every allocation (a scalar such as
``repeat('ab', 10^9)`` is built outside its buffer manager) and its interrupt cannot stop
one huge expression, so limits that must hold against hostile SQL are enforced by the
operating system: an allocation past the cap fails (DuckDB reports it as out of memory)
and a query past its time is ended with ``SIGKILL``. The worker reads the very generation
the caller pinned, through its own connection that can open no file (see
:mod:`convbank.store.sql`), and sends back at most ``max_rows`` rows with long cells cut.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._workers import Worker
from convbank.errors import DamagedBankError, QueryError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Result", "SqlSandbox", "parse_size"]

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_SLACK = 256 * 2**20
"""Address space a worker may use beyond its warm baseline and the query's limit."""


def parse_size(text: str) -> int:
    """Bytes of a size in DuckDB's units (``512MB``, ``2GB``, ``1GiB``, ``1000000``);
    raises :class:`ValueError` for anything else."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B?)\s*", text.upper())
    if not match or match.group(2) not in _UNITS:
        raise ValueError(f"{text!r} is not a size such as 512MB or 2GB")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _size(n: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("GB", 10**9), ("MB", 10**6)):
        if n >= factor and n % factor == 0:
            return f"{n // factor:,} {unit}"
    return f"{n:,} bytes"


@dataclass
class Result:
    """What a sandboxed query returned: column names, rows (cells cut to ``cell_chars``),
    whether more rows were left out, and the DuckDB type of each column."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    more: bool
    types: list[str] = field(default_factory=list)


def _vm_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _cut(value: Any, chars: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= chars else value[:chars] + f"… ({len(value):,} characters)"
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return data if len(data) <= chars else data[:chars] + f"… ({len(data):,} bytes)".encode()
    if isinstance(value, (list, tuple, dict)):
        import msgspec

        text = msgspec.json.encode(value, enc_hook=str).decode()
        return value if len(text) <= chars else text[:chars] + f"… ({len(text):,} characters)"
    return value


def _worker(
    pipe: Connection, root: str, memory_text: str, threads_text: str
) -> None:  # pragma: no cover - child
    """A worker's life: warm up, cap the address space, then answer queries until told to stop."""
    memory, threads = int(memory_text), int(threads_text)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # returns memory at once
    import resource

    import duckdb
    import pyarrow as pa

    from convbank.store.bank import Bank
    from convbank.store.sql import connect, damage_of, is_read_only, run

    bank = Bank(Path(root))
    limit = f"{max(memory // 2**20, 1)}MiB" if memory else None
    pipe.send(("ready",))  # imports done: time limits count from the next message
    pinned: dict[str, Any] = {}
    capped = False
    while True:
        try:
            message = pipe.recv()
        except (EOFError, OSError):  # the pool let go of this worker
            return
        if message is None:
            return
        generation, sql, max_rows, cell_chars = message
        try:
            snapshot = pinned.get(generation)
            if snapshot is None:
                for old in pinned.values():
                    old.close()
                snapshot = bank.snapshot_of(generation)
                pinned = {generation: snapshot}
            con = connect(snapshot, threads=threads, memory_limit=limit)
            if memory and not capped:  # the first query warms the process up; cap it above that
                con.sql("SELECT 1").fetchall()
                cap = _vm_bytes() + memory + _SLACK
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                capped = True
            try:
                if max_rows is None:  # the whole result, as Arrow
                    table = run(con, sql)
                    sink = pa.BufferOutputStream()
                    with pa.ipc.new_stream(sink, table.schema) as writer:
                        writer.write_table(table)
                    reply: tuple[Any, ...] = ("arrow", sink.getvalue().to_pybytes())
                else:
                    is_read_only(con, sql)
                    cur = con.execute(sql)
                    columns = [d[0] for d in cur.description or []]
                    types = [str(d[1]) for d in cur.description or []]
                    rows = cur.fetchmany(max_rows + 1) if columns else []
                    reply = (
                        "ok",
                        columns,
                        [tuple(_cut(v, cell_chars) for v in row) for row in rows[:max_rows]],
                        len(rows) > max_rows,
                        types,
                    )
            finally:
                con.close()
        except duckdb.OutOfMemoryException as exc:
            reply = ("memory", str(exc).splitlines()[0])
        except MemoryError:
            reply = ("memory", "out of memory")
        except duckdb.Error as exc:
            damage = damage_of(pinned.get(generation), exc)  # a corrupt page: name the file
            reply = (
                ("damaged", str(damage)) if damage else ("error", f"SQL error: {str(exc).splitlines()[0]}")
            )
        except DamagedBankError as exc:
            reply = ("damaged", str(exc))
        except QueryError as exc:
            reply = ("memory", str(exc)) if "more memory" in str(exc) else ("error", str(exc))
        except (TypeError, ValueError, UnicodeError) as exc:
            reply = ("error", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except Exception as exc:  # the bank went away, a damaged file: one line back
            reply = ("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        try:
            pipe.send(reply)
        except MemoryError:
            pipe.send(("memory", "the result is too large to send"))


class _Worker(Worker):
    STARTUP = 120.0
    """Seconds a new worker may take to import what it needs."""

    def __init__(self, root: Path, memory: int, threads: int) -> None:
        super().__init__("convbank.store.sandbox:_worker", str(root), str(memory), str(threads))
        self.pipe = self.connection
        try:  # wait until it can take a query, so that its start-up counts against no limit
            ready = self.pipe.poll(self.STARTUP) and self.pipe.recv() == ("ready",)
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.kill()
            raise QueryError("the query process could not start")


class SqlSandbox:
    """A pool of SQL worker processes over one bank. :meth:`run` is thread-safe: each call
    takes a free worker (starting one when none is free, up to ``workers``, else waiting).
    ``memory`` caps each query (bytes; 0: no cap)."""

    def __init__(self, root: Path, *, workers: int = 2, memory: int = 256 * 2**20, threads: int = 2) -> None:
        self.root = Path(root)
        self.memory = memory
        self.threads = threads
        self._free: list[_Worker] = []
        self._count = 0
        self._limit = workers
        self._cond = threading.Condition()
        self._closed = False

    def _take(self) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise QueryError("the query was stopped: the server is shutting down")
                if self._free:
                    return self._free.pop()
                if self._count < self._limit:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return _Worker(self.root, self.memory, self.threads)
        except BaseException:
            self._drop()
            raise

    def _give(self, worker: _Worker) -> None:
        with self._cond:
            if self._closed:
                worker.kill()
                self._count -= 1
            else:
                self._free.append(worker)
            self._cond.notify()

    def _drop(self) -> None:
        with self._cond:
            self._count -= 1
            self._cond.notify()

    def run(
        self,
        generation: str | None,
        sql: str,
        *,
        timeout: float | None,
        max_rows: int,
        cell_chars: int = 10_000,
        stop: Callable[[], bool] = lambda: False,
    ) -> Result:
        """Run ``sql`` on ``generation`` of the bank within ``timeout`` seconds: its first
        ``max_rows`` rows. ``stop()`` is asked every 50 ms and ends the query when it says
        so (the client left)."""
        reply = self._ask(
            generation, sql, timeout=timeout, max_rows=max_rows, cell_chars=cell_chars, stop=stop
        )
        return Result(reply[1], reply[2], reply[3], reply[4])

    def table(self, generation: str | None, sql: str, *, timeout: float | None) -> pa.Table:
        """Run ``sql`` on ``generation`` within ``timeout`` seconds: the whole result."""
        import pyarrow as pa

        reply = self._ask(generation, sql, timeout=timeout, max_rows=None, cell_chars=0, stop=lambda: False)
        table: pa.Table = pa.ipc.open_stream(reply[1]).read_all()
        return table

    def _ask(
        self,
        generation: str | None,
        sql: str,
        *,
        timeout: float | None,
        max_rows: int | None,
        cell_chars: int,
        stop: Callable[[], bool],
    ) -> tuple[Any, ...]:
        if timeout is not None and not (0 < timeout < float("inf")):
            raise QueryError(f"a time limit is a positive number of seconds, not {timeout}")
        worker = self._take()
        deadline = time.monotonic() + timeout if timeout else None
        try:
            worker.pipe.send((generation, sql, max_rows, cell_chars))
            while not worker.pipe.poll(0.05):
                if not worker.alive():
                    raise QueryError("the query's process ended before it answered (it ran out of memory)")
                if deadline is not None and time.monotonic() > deadline:
                    raise QueryError(f"the query ran past its time limit of {timeout:g} s and was stopped")
                if stop() or self._closed:
                    raise QueryError("the query was stopped before it finished")
            reply = worker.pipe.recv()
        except (QueryError, OSError, EOFError) as exc:
            worker.kill()
            self._drop()
            if isinstance(exc, QueryError):
                raise
            raise QueryError("the query's process ended before it answered (it ran out of memory)") from exc
        except BaseException:
            worker.kill()
            self._drop()
            raise
        self._give(worker)
        kind = reply[0]
        if kind in ("ok", "arrow"):
            return tuple(reply)
        if kind == "damaged":
            raise DamagedBankError(reply[1])
        if kind == "memory":
            raise QueryError(
                f"the query needs more memory than its limit of {_size(self.memory)} allows; "
                "select fewer rows or columns, or aggregate"
            )
        raise QueryError(reply[1])

    def close(self) -> None:
        """Stop every worker (running queries end at once)."""
        with self._cond:
            self._closed = True
            workers, self._free = self._free, []
            self._cond.notify_all()
        for worker in workers:
            worker.kill()
