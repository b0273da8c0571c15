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
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._wording import counted
from convbank._workers import WAKE, Worker, may_fork, upgraded
from convbank.errors import DamagedBankError, QueryError, SetupError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from convbank.store.bank import Bank, Snapshot
    from convbank.store.manifest import Manifest
    from convbank.store.sql import Begin

__all__ = ["Result", "SqlSandbox", "manifest_digest", "parse_size"]

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_SLACK = 256 * 2**20
"""Address space a worker may use beyond its warm baseline and the query's limit."""


def parse_size(text: str) -> int:
    """Bytes of a size in DuckDB's units (``512MB``, ``2GB``, ``1GiB``, ``1000000``; zero in
    any unit, ``0`` or ``0MB``, is 0: no limit); raises :class:`ValueError` for anything
    else, a size below one byte (``0.4B``) too, which would read as none.

    >>> parse_size("512MB"), parse_size("0MB")
    (512000000, 0)
    """
    match = re.fullmatch(r"\s*(\d{1,20}(?:\.\d{1,20})?)\s*([KMGT]?I?B?)\s*", text.upper())
    shown = repr(text if len(text) <= 40 else text[:40] + "…")
    if not match or match.group(2) not in _UNITS:
        raise ValueError(f"{shown} is not a size such as 512MB or 2GB")
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    if size == 0 and float(match.group(1)) != 0:
        raise ValueError(f"{shown} is less than one byte; give a size such as 512MB or 2GB")
    if size > 2**60:
        raise ValueError(f"{shown} is more memory than any machine has; give a size such as 512MB or 2GB")
    return size


def _size(n: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("GB", 10**9), ("MB", 10**6)):
        if n >= factor and n % factor == 0:
            return f"{n // factor:,} {unit}"
    return f"{counted(n, 'byte')}"


@dataclass
class Result:
    """What a sandboxed query returned: column names, rows (cells cut to ``cell_chars``),
    whether more rows were left out, and the DuckDB type of each column."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    more: bool
    types: list[str] = field(default_factory=list)


def manifest_digest(manifest: Manifest) -> str:
    """The sha256 of a generation's manifest as parsed: what a worker checks the generation
    it reads against, so that it answers from the very manifest its caller pinned."""
    import hashlib

    import msgspec

    return hashlib.sha256(msgspec.msgpack.encode(manifest)).hexdigest()


def _pinned(bank: Bank, pinned: dict[str, Snapshot], generation: str | None, digest: str | None) -> Snapshot:
    """The worker's snapshot of ``generation`` (kept between queries in ``pinned``), its
    manifest the caller's (``digest``): one kept from before is read again once, and a
    generation whose record says otherwise now (written in place since the caller read it)
    is damage, never an answer from other files (before: the query read them)."""
    snapshot = pinned.get(generation or "")
    for _ in range(2):
        if snapshot is None:
            for old in pinned.values():
                old.close()
            pinned.clear()
            snapshot = pinned[generation or ""] = bank.snapshot_of(generation)
        if digest is None or manifest_digest(snapshot.manifest) == digest:
            return snapshot
        snapshot = None
    raise DamagedBankError(
        f"the bank at {bank.root}: the manifest of generation {generation} changed after the query "
        "pinned it (written in place, not by a build); run `convbank doctor`",
        path=bank.root,
    )


def _pin(of: Snapshot | str | None) -> tuple[str | None, str | None]:
    """The generation a query reads and the digest of its manifest (none for a bare name)."""
    if of is None or isinstance(of, str):
        return of, None
    return of.generation, manifest_digest(of.manifest)


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
        return data if len(data) <= chars else data[:chars] + f"… ({counted(len(data), 'byte')})".encode()
    if isinstance(value, (list, tuple, dict)):  # JSON, as `query --format csv` writes it
        from convbank._textio import json_bytes

        text = json_bytes(value).decode()
        return text if len(text) <= chars else text[:chars] + f"… ({len(text):,} characters)"
    return value


def _worker(
    pipe: Connection, root: str, memory_text: str, threads_text: str
) -> None:  # pragma: no cover - child
    """A worker's life: warm up, cap the address space, then answer queries until told to stop."""
    memory, threads = int(memory_text), int(threads_text)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # returns memory at once
    import resource

    import duckdb
    import pyarrow

    from convbank.store.bank import Bank
    from convbank.store.sql import connect, damage_of

    pyarrow.set_memory_pool(pyarrow.system_memory_pool())  # also when forked: pyarrow was loaded

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
        generation, digest, sql, mode, options = message
        try:
            snapshot = _pinned(bank, pinned, generation, digest)
            con = connect(snapshot, threads=threads, memory_limit=limit)
            if memory and not capped:  # the first query warms the process up; cap it above that
                con.sql("SELECT 1").fetchall()
                cap = _vm_bytes() + memory + _SLACK
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                capped = True
            try:
                reply: tuple[Any, ...] = _answer(pipe, con, sql, mode, options)
            finally:
                con.close()
        except duckdb.OutOfMemoryException as exc:
            reply = ("memory", str(exc).splitlines()[0])
        except MemoryError:
            reply = ("memory", "out of memory")
        except duckdb.Error as exc:
            damage = damage_of(pinned.get(generation or ""), exc)  # a corrupt page: name the file
            error = f"SQL error: {str(exc).rstrip()}"
            reply = ("damaged", str(damage), damage.path) if damage else ("error", error)
        except DamagedBankError as exc:  # its facts cross the pipe with its message
            reply = ("damaged", str(exc), exc.path)
        except SetupError as exc:  # the process's limits (too many files open): not the query's fault
            reply = ("setup", str(exc), exc.path)
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


def _answer(  # pragma: no cover - child
    pipe: Connection, con: duckdb.DuckDBPyConnection, sql: str, mode: str, options: tuple[Any, ...]
) -> tuple[Any, ...]:
    """One query's reply: ``stream`` sends every batch as it comes (one Arrow IPC message
    each) and replies ``("end",)``; otherwise the first ``max_rows`` rows, each cell cut to
    ``cell_chars``, whether there were more, and the column types."""
    from convbank.store.sql import Begin, results

    if mode == "stream":
        batch_rows, last_only = options
        for item in results(con, sql, batch_rows=batch_rows, last_only=last_only):
            if isinstance(item, Begin):
                pipe.send(("begin", _ipc(item.schema, None), item.index, item.count))
            else:
                pipe.send(("batch", _ipc(item.schema, item)))
        return ("end",)
    max_rows, cell_chars = options
    from convbank.store._values import python_values

    columns: list[str] = []
    types: list[str] = []
    rows: list[tuple[Any, ...]] = []
    # The values as `query` gives them (through Arrow, exact, DuckDB's text where Python
    # cannot hold one), not DuckDB's Python objects: those made a month 30 days and the date
    # -infinity 0001-01-01. Each batch is vouched for (verify) before it is given.
    stream = results(con, sql, batch_rows=max_rows + 1, last_only=True)
    try:
        for item in stream:
            if isinstance(item, Begin):
                columns, types, rows = item.schema.names, item.types, []
            elif len(rows) <= max_rows:
                rows.extend(zip(*(python_values(c) for c in item.columns), strict=True))
            if len(rows) > max_rows:
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    cells = [tuple(_cut(v, cell_chars) for v in row) for row in rows[:max_rows]]
    return ("ok", columns, cells, len(rows) > max_rows, types)


def _ipc(schema: pa.Schema, batch: pa.RecordBatch | None) -> bytes:  # pragma: no cover - child
    """A schema, or one batch, as an Arrow IPC stream."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        if batch is not None:
            writer.write_batch(batch)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _read_ipc(data: bytes) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    import pyarrow as pa

    reader = pa.ipc.open_stream(data)
    return reader.schema, list(reader)


class _Worker(Worker):
    STARTUP = 120.0
    """Seconds a new worker may take to import what it needs."""
    FORKED_STARTUP = 10.0
    """Seconds a forked worker may take to be ready (it imports nothing)."""

    def __init__(self, root: Path, memory: int, threads: int, *, fork: bool = False) -> None:
        target = "convbank.store.sandbox:_worker"
        super().__init__(target, str(root), str(memory), str(threads), fork=fork)
        self.pipe = self.connection
        first: Any = None
        try:  # wait until it can take a query, so that its start-up counts against no limit
            wait = self.FORKED_STARTUP if fork else self.STARTUP
            first = self.pipe.recv() if self.pipe.poll(wait) else None
        except (EOFError, OSError):
            pass
        except BaseException:  # Ctrl-C while it starts: it goes too
            self.kill()
            raise
        if first != ("ready",):
            self.kill()  # one that runs another convbank (installed since) says so
            raise QueryError(upgraded(first) or "the query process could not start")


class SqlSandbox:
    """A pool of SQL worker processes over one bank. :meth:`run` is thread-safe: each call
    takes a free worker (starting one when none is free, up to ``workers``, else waiting).
    ``memory`` caps each query (bytes; 0: no cap). A worker stays warm between queries; one
    stopped at its deadline (or by the caller) is killed, and the next query starts another.
    With ``fork``, a worker is forked from this process where that is safe (see
    :func:`convbank._workers.may_fork`): the first limited query of a process then costs
    milliseconds more than an unlimited one, not an interpreter's start-up."""

    def __init__(
        self, root: Path, *, workers: int = 2, memory: int = 256 * 2**20, threads: int = 2, fork: bool = False
    ) -> None:
        self.root = Path(root)
        self.fork = fork
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
                self._cond.wait(WAKE)  # in steps: Ctrl-C is acted on at once
        try:
            if self.fork and may_fork():
                with suppress(QueryError):  # a forked worker that is not ready: start one anew
                    return _Worker(self.root, self.memory, self.threads, fork=True)
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
        generation: Snapshot | str | None,
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
        reply = next(self._ask(generation, sql, "rows", (max_rows, cell_chars), timeout=timeout, stop=stop))
        return Result(reply[1], reply[2], reply[3], reply[4])

    def results(
        self,
        generation: Snapshot | str | None,
        sql: str,
        *,
        timeout: float | None,
        batch_rows: int = 8192,
        last_only: bool = False,
    ) -> Iterator[Begin | pa.RecordBatch]:
        """Stream ``sql`` on ``generation`` within ``timeout`` seconds, as
        :func:`convbank.store.sql.results` does: the worker sends a batch at a time (the
        socket's buffer holds it back while the reader is slow), so neither process holds
        the whole result. Leaving the stream early ends the worker."""
        from convbank.store.sql import Begin

        options = (batch_rows, last_only)
        for reply in self._ask(generation, sql, "stream", options, timeout=timeout, stop=lambda: False):
            if reply[0] == "begin":
                yield Begin(_read_ipc(reply[1])[0], reply[2], reply[3])
            elif reply[0] == "batch":
                yield from _read_ipc(reply[1])[1]

    def table(self, generation: Snapshot | str | None, sql: str, *, timeout: float | None) -> pa.Table:
        """Run ``sql`` on ``generation`` within ``timeout`` seconds: the last statement's
        whole result."""
        from convbank.store.sql import collect

        return collect(self.results(generation, sql, timeout=timeout, last_only=True))

    def _ask(
        self,
        generation: Snapshot | str | None,
        sql: str,
        mode: str,
        options: tuple[Any, ...],
        *,
        timeout: float | None,
        stop: Callable[[], bool],
    ) -> Iterator[tuple[Any, ...]]:
        """Send a query to a worker and yield its replies up to the last (``ok`` or ``end``).
        ``generation``: a pinned :class:`Snapshot` (the worker reads its very manifest, or
        says it changed), or a generation's name."""
        if timeout is not None and not (0 < timeout < float("inf")):
            raise QueryError(
                f"a time limit is a positive number of seconds, not {timeout}", sql=sql, limit=timeout
            )
        late = f"the query ran past its time limit of {timeout:g} s and was stopped" if timeout else ""
        gone = "the query's process ended before it answered (it ran out of memory)"
        worker = self._take()
        deadline = time.monotonic() + timeout if timeout else None
        done = False
        try:
            worker.pipe.send((*_pin(generation), sql, mode, options))
            while True:
                while not worker.pipe.poll(0.05):
                    if not worker.alive():
                        raise QueryError(gone, sql=sql)
                    if deadline is not None and time.monotonic() > deadline:
                        raise QueryError(late, sql=sql, limit=timeout)
                    if stop() or self._closed:
                        raise QueryError("the query was stopped before it finished", sql=sql)
                reply = worker.pipe.recv()
                if reply[0] in ("begin", "batch"):
                    if deadline is not None and time.monotonic() > deadline:
                        raise QueryError(late, sql=sql, limit=timeout)
                    yield reply
                    continue
                done = True
                break
        except (OSError, EOFError) as exc:
            raise QueryError(gone, sql=sql) from exc
        finally:
            if done:
                self._give(worker)
            else:  # stopped, failed or left early (Ctrl-C, a closed stream): the worker goes
                worker.kill()
                self._drop()
        kind = reply[0]
        if kind in ("ok", "end"):
            yield reply
            return
        if kind == "damaged":
            raise DamagedBankError(reply[1], path=reply[2])
        if kind == "setup":
            raise SetupError(reply[1], path=reply[2])
        if kind == "memory":
            raise QueryError(
                f"the query needs more memory than its limit of {_size(self.memory)} allows; "
                "select fewer rows or columns, or aggregate",
                sql=sql,
                limit=_size(self.memory),
            )
        raise QueryError(reply[1], sql=sql)

    def close(self) -> None:
        """Stop every worker (running queries end at once)."""
        with self._cond:
            self._closed = True
            workers, self._free = self._free, []
            self._cond.notify_all()
        for worker in workers:
            worker.kill()
