""":meth:`Examples.map`: a function over every example, its result an Arrow table cached
on disk under the fingerprint of the function and of the view.

The cache is a folder of Arrow IPC files (uncompressed), one per result, written atomically:
``<cache>/<tag>/<fingerprint>.<sha256>.arrow``, the fingerprint in its schema metadata too; an
entry is read into memory and served only when its bytes hash to its name and name its
fingerprint (see :func:`_read`). For a corpus's views the
folder is beside the bank (``$CONVBANK_HOME/bank-cache/map/<dataset>``) and the tag is the
bank generation the corpus reads, so a rebuild makes new entries and the entries of
generations the bank no longer holds are removed when a new one is written.
"""

from __future__ import annotations

import itertools
import os
import shutil
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from convbank._arguments import a_flag
from convbank._wording import counted
from convbank._workers import received
from convbank.errors import ConvbankError, whole_number
from convbank.examples._fingerprint import UnhashableError, fingerprint
from convbank.examples._rows import Example, columns_of, names_of

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    import pyarrow as pa

__all__ = ["MapError", "run_map"]

_JOB: tuple[Any, Callable[..., Any], dict[str, Any]] | None = None
"""The job a forked map worker runs (set before forking: a lambda needs no pickling)."""


class MapError(ConvbankError, ValueError):
    """A function given to :meth:`Examples.map` returned something that is not a table."""


def run_map(
    view: Any,
    function: Callable[..., Any],
    *,
    batched: bool,
    batch_size: int,
    num_proc: int | None,
    remove_columns: Sequence[str] | None,
    cache: bool,
) -> tuple[pa.Table, str | None]:
    """What :meth:`Examples.map` does (see there): the result table and its cache key."""
    batched, cache = a_flag(batched, "batched"), a_flag(cache, "cache")
    batch_size = whole_number(batch_size, "batch_size", least=1)
    num_proc = None if num_proc is None else whole_number(num_proc, "num_proc", least=1)
    removing = names_of(remove_columns or [])
    for name in removing:  # a column the view has not is an error naming its columns, never ignored
        view._check_column(name)
    options = {"batched": batched, "batch_size": batch_size, "remove_columns": removing}
    key = _key(view, function, options) if cache else None
    folder = None
    if key is not None:
        home, tag = view.cache_home()
        folder = Path(home) / (tag or "any")
        found = _read(folder, key)
        if found is not None:
            return found, key
    workers = max(1, min(int(num_proc or 1), len(view) or 1))
    bounds = np.linspace(0, len(view), workers + 1).astype(np.int64).tolist()
    if workers == 1:
        pieces = [compute(view, function, options, 0, len(view))]
    else:
        pieces = _in_processes(view, function, options, bounds)
    table = _concat(pieces)
    if not len(view) and not table.num_columns:  # nothing to call the function on: the view's
        table = view.to_arrow().drop_columns(removing)  # own columns stay, as Hugging Face's
    if folder is not None and key is not None:
        _write(folder, key, table)
        _prune(folder.parent, keep=folder.name, current=view)
    return table, key


def _key(view: Any, function: Callable[..., Any], options: dict[str, Any]) -> str | None:
    try:
        return fingerprint(view._key(), function, options)
    except (UnhashableError, TypeError) as exc:
        warnings.warn(
            f"map() cannot fingerprint its function or view ({exc}); its result is not cached",
            stacklevel=3,
        )
        return None


def compute(
    view: Any, function: Callable[..., Any], options: dict[str, Any], start: int, stop: int
) -> pa.Table:
    """The mapped rows of examples ``start`` to ``stop`` of ``view``, as a table."""
    import pyarrow as pa

    step = options["batch_size"] if options["batched"] else 1024
    removed = set(options["remove_columns"])
    columns: dict[str, list[Any]] = {}
    for at in range(start, stop, step):
        rows = view._fetch(np.arange(at, min(at + step, stop), dtype=np.int64))
        out = _apply(function, rows, options["batched"], removed, at)
        named = [k for k in out if not isinstance(k, str)]
        if named:
            raise MapError(
                f"map()'s function returned key {named[0]!r} ({type(named[0]).__name__}) for examples "
                f"from {at:,}; a column is named by a string"
            )
        if not columns:
            columns = {k: [] for k in out}
        if set(out) != set(columns):
            raise MapError(
                f"map()'s function returned columns {sorted(out)} for examples from {at:,} but "
                f"{sorted(columns)} before; every call must return the same keys"
            )
        for k, values in out.items():
            columns[k].extend(values)
    try:
        return pa.table(columns) if columns else pa.table({})
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        OverflowError,  # 2**70
        UnicodeError,  # "\ud800"
    ) as exc:
        raise MapError(f"map()'s results do not make a table: {exc}") from None


def _apply(
    function: Callable[..., Any], rows: list[Example], batched: bool, removed: set[str], at: int
) -> dict[str, list[Any]]:
    if rows and not isinstance(rows[0], dict):  # objects (a corpus's conversations): no columns to keep
        return _apply_to_objects(function, rows, batched, at)
    given = columns_of(rows)
    if not batched:
        made = []
        for i, row in enumerate(rows):
            result = function(row)
            if result is None:
                result = {}
            if not isinstance(result, dict):
                raise MapError(
                    f"map()'s function returned {type(result).__name__} for example {at + i:,}; "
                    "it must return a dict (the keys to add or replace)"
                )
            made.append({**{k: v for k, v in row.items() if k not in removed}, **result})
        return columns_of(made)
    result = function(given)
    if not isinstance(result, dict):
        raise MapError(
            f"map(batched=True)'s function returned {type(result).__name__} for the batch at {at:,}; "
            "it must return a dict of lists"
        )
    _check_lists(result, at)
    lengths = {k: len(v) for k, v in result.items()}
    kept = {k: v for k, v in given.items() if k not in removed and k not in result}
    if len(set(lengths.values())) > 1:
        raise MapError(f"map(batched=True)'s function returned lists of different lengths: {lengths}")
    if lengths and kept and next(iter(lengths.values())) != len(rows):
        raise MapError(
            f"map(batched=True)'s function returned {counted(next(iter(lengths.values())), 'row')} for a "
            f"batch of {len(rows)}; to change the number of rows, remove every input column "
            f"(remove_columns={sorted(given)!r})"
        )
    return {**kept, **{k: list(v) for k, v in result.items()}}


def _apply_to_objects(
    function: Callable[..., Any], rows: list[Any], batched: bool, at: int
) -> dict[str, list[Any]]:
    results = [function(rows)] if batched else [function(row) for row in rows]
    for i, result in enumerate(results):
        if not isinstance(result, dict):
            what = f"the batch at {at:,}" if batched else f"conversation {at + i:,}"
            raise MapError(
                f"map()'s function returned {type(result).__name__} for {what}; it must return a dict"
                + (" of lists" if batched else "")
            )
    if batched:
        _check_lists(results[0], at)
        return {k: list(v) for k, v in results[0].items()}
    return columns_of(results)


def _check_lists(result: dict[Any, Any], at: int) -> None:
    """Raise :class:`MapError` unless every value a batched function returned is a list of
    values (a list, a tuple, an array), not one value (a number, a text, a dict)."""
    single = [k for k, v in result.items() if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__len__")]
    if single:
        raise MapError(
            f"map(batched=True)'s function returned {type(result[single[0]]).__name__} as column "
            f"{single[0]!r} for the batch at {at:,}; it must return a dict of lists"
        )


def _concat(pieces: list[pa.Table]) -> pa.Table:
    import pyarrow as pa

    pieces = [p for p in pieces if p.num_columns]
    if not pieces:
        return pa.table({})
    try:
        return pa.concat_tables(pieces, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise MapError(f"map()'s results differ in type between processes: {exc}") from None


# ---------------------------------------------------------------------- processes
def _in_processes(
    view: Any, function: Callable[..., Any], options: dict[str, Any], bounds: list[int]
) -> list[pa.Table]:
    """Each range computed by a worker process: forked from this one where that is safe (the
    function needs no pickling then), else a new interpreter given the pickled job (with
    ``cloudpickle`` where it is installed, so a lambda goes too); a job that cannot be pickled
    is computed here, with a warning."""
    from convbank._workers import Worker, may_fork

    global _JOB  # noqa: PLW0603 (what a forked worker inherits)
    fork = may_fork()
    job = None
    if not fork:
        job = _pickled((view, function, options))
        if job is None:
            return [compute(view, function, options, bounds[0], bounds[-1])]
    _JOB = (view, function, options)
    try:
        workers = [
            Worker("convbank.examples._map:serve_range", str(a), str(b), fork=fork)
            for a, b in itertools.pairwise(bounds)
        ]
    finally:
        _JOB = None
    try:
        for worker in workers:
            worker.connection.send(job)
        return [_receive(worker) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()


def _pickled(job: tuple[Any, ...]) -> bytes | None:
    """The job as bytes for a new interpreter, or None (said in a warning) when it does not
    pickle."""
    import pickle

    try:
        return pickle.dumps(job)
    except Exception as exc:
        problem = exc
    try:
        import cloudpickle

        data: bytes = cloudpickle.dumps(job)
        return data
    except Exception as exc:  # cloudpickle absent, or the job holds what nothing pickles
        problem = exc if not isinstance(exc, ImportError) else problem
    warnings.warn(
        f"map(num_proc=...) computes in this process: it cannot fork here (threads or an open DuckDB "
        f"database) and cannot pickle its function for new processes ({problem}); "
        "define the function at module level to use processes",
        stacklevel=5,
    )
    return None


def _receive(worker: Any) -> pa.Table:
    import pyarrow as pa

    try:
        status, value = received(worker.connection)
    except (EOFError, OSError):
        raise MapError("a map() worker process ended without answering") from None
    if status == "error":
        raise value
    return pa.ipc.open_stream(value).read_all()


def serve_range(connection: Connection, start: str, stop: str) -> None:  # pragma: no cover - a worker
    """A map worker: compute one range and send it back as Arrow IPC bytes."""
    import pickle

    import pyarrow as pa

    job = connection.recv()
    view, function, options = _JOB if job is None and _JOB is not None else pickle.loads(job)
    try:
        table = compute(view, function, options, int(start), int(stop))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        reply: tuple[str, Any] = ("ok", sink.getvalue().to_pybytes())
    except Exception as exc:
        reply = ("error", exc)
    try:
        connection.send(reply)
    except Exception as exc:  # an unpicklable exception
        connection.send(("error", MapError(f"{type(exc).__name__}: {exc}")))


# ---------------------------------------------------------------------- the cache
_KEY = b"convbank.map.key"
"""The schema metadata key that names the fingerprint an entry was computed for."""


def _read(folder: Path, key: str) -> pa.Table | None:
    """The cached result for ``key``, or None when there is none whose bytes are the ones
    written: an entry is named ``<key>.<sha256 of its bytes>.arrow`` and names its key inside;
    it is read into memory through one descriptor (no link followed, only a regular file),
    and served only if those bytes hash to its name and name ``key``. A damaged, truncated,
    swapped or linked entry is computed again; one rewritten under a reader changes nothing
    it holds (no memory map: no ``SIGBUS``)."""
    import pyarrow as pa

    for entry in sorted(folder.glob(f"{key}.*.arrow")) if folder.is_dir() else ():
        data = _verified_bytes(entry, entry.name[len(key) + 1 : -len(".arrow")])
        if data is None:
            continue
        try:
            table = pa.ipc.open_file(pa.py_buffer(data)).read_all()
        except (OSError, pa.ArrowInvalid):
            continue
        meta = dict(table.schema.metadata or {})
        if meta.pop(_KEY, None) != key.encode():
            continue
        return table.replace_schema_metadata(meta or None)
    return None


def _verified_bytes(entry: Path, digest: str) -> bytes | None:
    """The bytes of ``entry`` if it is a regular file (not a link, not a FIFO) whose sha256
    is ``digest``, else None."""
    import hashlib
    import stat

    try:
        fd = os.open(entry, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if hashlib.sha256(data).hexdigest() == digest else None


def _write(folder: Path, key: str, table: pa.Table) -> None:
    """Write a result atomically as ``<key>.<sha256>.arrow`` (another process reading it sees
    all of it or nothing), its key in its schema metadata, and remove the other entries of
    that key (damaged ones, or another process's result of the same call); a cache that
    cannot be written (a full disk, a read-only folder) is skipped with a warning."""
    import hashlib

    import pyarrow as pa

    from convbank._atomic import temporary_beside

    tagged = table.replace_schema_metadata({**(table.schema.metadata or {}), _KEY: key.encode()})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = temporary_beside(folder / f"{key}.arrow")
        try:
            with os.fdopen(fd, "w+b") as raw:
                with pa.ipc.new_file(raw, tagged.schema) as writer:
                    writer.write_table(tagged)
                raw.flush()
                raw.seek(0)
                digest = hashlib.file_digest(raw, "sha256").hexdigest()
            path = folder / f"{key}.{digest}.arrow"
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        warnings.warn(f"map() could not cache its result in {folder} ({exc})", stacklevel=4)
        return
    for other in folder.glob(f"{key}.*.arrow"):
        if other != path:
            other.unlink(missing_ok=True)


def _prune(folder: Path, *, keep: str, current: Any) -> None:
    """Remove the entries of generations the bank no longer holds."""
    alive = getattr(current, "live_generations", None)
    if alive is None:
        return
    held = set(alive())
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.is_dir() and entry.name != keep and entry.name not in held:
            shutil.rmtree(entry, ignore_errors=True)
