""":meth:`convbank.Corpus.scan`: a polars ``LazyFrame`` served from bytes the bank verified.

polars' own Parquet reader checks neither page checksums nor the files against the
manifest, so the frame is a polars IO source (``register_io_source``) over the corpus's own
reader instead: at ``collect()`` each file is read once and checked against the manifest's
size and sha256 (:meth:`convbank.store.Snapshot.verified_bytes`) before anything decodes it.
Those checked bytes then go to polars' own reader with the query's filter and projection
(the columns the query uses, ``meta`` as stored), or, where ``meta`` is typed or the corpus
is a selection, the rows are those of :meth:`convbank.Corpus.to_arrow` (the selection's
order and repeats, typed ``meta``), filtered by the query's predicate piece by piece. The
schema is known without reading a file: the model's columns, and ``meta`` typed from the
structures the manifest records (:class:`convbank.model.structure.Structure`).
"""

from __future__ import annotations

import atexit
import io
import os
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Literal

import pyarrow as pa

from convbank._forksafe import renew_after_fork
from convbank.corpus._source import stored_structure
from convbank.errors import DamagedBankError, SchemaVersionError
from convbank.model import SCHEMA_VERSION, UNIFIED_TABLES, table_schemas
from convbank.store.integrity import STRUCTURE_KEY, damaged, first_line, footer_bytes, structure_problem

if TYPE_CHECKING:
    import polars as pl

    from convbank.store import FileRef, Snapshot

__all__ = ["SCAN_BYTES", "MetaForm", "lazy_frame", "meta_form", "scan"]

MetaForm = Literal["struct", "json"]
"""How a table's ``meta`` is given: typed (``struct``) or as the stored JSON text."""


def meta_form(meta: Any) -> MetaForm:
    """``meta=`` as given, or a ``ValueError`` naming what it takes: another word is never
    read as one of them (``"xml"`` gave the JSON text in one reader, types in another)."""
    if isinstance(meta, str) and meta in ("struct", "json"):
        return "struct" if meta == "struct" else "json"
    raise ValueError(f"meta is 'struct' (typed) or 'json' (the stored text), not {meta!r}")


Corpus = Any
"""A :class:`convbank.Corpus` (its table views, :mod:`convbank.corpus._frames`, import this
module: it names none of them back)."""

SCAN_BYTES = 256 * 2**20
"""The most bytes of table files a scan holds at once (checked, for polars to read): parts
beyond are read after those before them are done."""

EXIT_WAIT = 30.0
"""The most seconds the interpreter's exit waits for the reads of scans in flight."""


class _Reads:
    """The reads of scans under way in threads of polars' engine: the interpreter's exit
    waits for them (:data:`EXIT_WAIT` at most). polars' streaming engine asks for a scan's
    next piece in a thread of its own, ahead of need, and leaves that read running when the
    query fails (a polars error after the first piece); a thread of polars that is still in
    Python when the interpreter finalizes is ended by it, and unwinding it through polars'
    Rust aborted the process (``FATAL: exception not rethrown``, exit 134, 3 of 3 runs of a
    failing streaming ``collect`` of CaSiNo's typed turns)."""

    def __init__(self) -> None:
        self.count = 0
        self._done = threading.Condition()
        renew_after_fork(self, count=int, _done=threading.Condition)

    @contextmanager
    def one(self) -> Iterator[None]:
        """A read under way for as long as the block runs."""
        with self._done:
            self.count += 1
        try:
            yield
        finally:
            with self._done:
                self.count -= 1
                self._done.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until no read is under way (``timeout`` seconds at most): whether none is."""
        with self._done:
            return self._done.wait_for(lambda: self.count == 0, timeout)


_READS = _Reads()
atexit.register(_READS.wait, EXIT_WAIT)


def scan(corpus: Corpus, name: str, meta: MetaForm) -> pl.LazyFrame:
    """:meth:`convbank.Corpus.scan` of table ``name`` (``raw`` already named as its table):
    the frame holds ``corpus``, so its generation stays pinned while the frame is referenced."""
    for part in corpus.parts() or corpus._source.parts[:1]:  # a cleaned generation fails now
        corpus.snapshot.present(corpus._source.files(name, part))
    typed = name in UNIFIED_TABLES and meta == "struct"
    stored = table_schemas()[name] if name in UNIFIED_TABLES else corpus._stored_schema(name)
    return lazy_frame(
        lambda columns: pieces(corpus, name, columns, meta),
        scan_schema(corpus, name, meta),
        stored=stored.names,
        views=list(corpus.dataset.presentation.meta_views().get(name, {})) if typed else [],
        detail=f"{corpus.dataset.name}/{name}, verified against the manifest",
    )


def scan_schema(corpus: Corpus, name: str, meta: MetaForm) -> pl.Schema:
    """The polars schema of :func:`scan`, made once a source: of a unified table, from the
    model's columns and the ``meta`` structures the manifest records
    (:func:`known_schema`), reading no file; otherwise (a raw table, a bank written before
    structures were recorded, a view of no declared type) from the typed rows of an empty
    table, as :meth:`convbank.Corpus.to_arrow` types them."""
    import polars as pl

    found: pl.Schema | None = corpus._source.scan_schemas.get((name, meta))
    if found is None:
        arrow = known_schema(corpus, name, meta)
        if arrow is None:
            arrow = corpus._typed(name, corpus._empty(name), meta).schema
        frame = pl.from_arrow(arrow.empty_table())
        assert isinstance(frame, pl.DataFrame)
        found = corpus._source.scan_schemas[(name, meta)] = frame.schema
    return found


def known_schema(corpus: Corpus, name: str, meta: MetaForm) -> pa.Schema | None:
    """The Arrow schema of :meth:`convbank.Corpus.to_arrow` of a unified table made without
    reading it: the keys, the model's columns, ``meta`` of the type of the manifest's
    structures merged, and the dataset's views of their declared types
    (:meth:`convbank.datasets.Presentation.meta_view_types`); None where that cannot be done."""
    if name not in UNIFIED_TABLES:
        return None
    keys = [pa.field(k, pa.string()) for k in ("dataset", "config", "split")]
    stored = list(table_schemas()[name])
    if meta == "json":
        return pa.schema([*keys, *stored])
    refs = corpus.snapshot.refs(name, corpus.dataset.name)
    structure = stored_structure(refs)
    views = corpus.dataset.presentation.meta_views().get(name, {})
    types = corpus.dataset.presentation.meta_view_types().get(name, {})
    if structure is None or any(view not in types for view in views):
        return None
    for ref in refs:  # every split types meta, read by this corpus or not
        confirm_structure(corpus.snapshot, ref)
    typed = [f.with_type(structure.arrow_type()) if f.name == "meta" else f for f in stored]
    return pa.schema([*keys, *typed, *(pa.field(view, types[view]) for view in views)])


def pieces(corpus: Corpus, name: str, columns: list[str], meta: MetaForm) -> Iterator[pl.LazyFrame]:
    """The rows of :func:`scan` as lazy frames, of the stored ``columns`` a query needs.
    Where ``meta`` need not be typed (it is not among them, or ``meta="json"``) and the
    corpus is not a selection, one frame for parts of up to :data:`SCAN_BYTES` of files
    together: their files handed to polars' own Parquet reader as bytes checked against the
    manifest (:func:`verified_source`), so that the query's filter and projection reach the
    reader; otherwise (or in a bank that records no file digests) a frame a part (one for a
    selection) of :meth:`convbank.Corpus.to_arrow`'s rows, read from verified bytes."""
    import polars as pl

    parts = {part: corpus._source.files(name, part) for part in corpus.parts()}
    typed = meta == "struct" and "meta" in columns
    digests = all(ref.sha256 for refs in parts.values() for ref in refs)
    if corpus._indices is not None or name not in UNIFIED_TABLES or typed or not digests:
        for table in corpus._rows(name, columns, meta=meta, verified=True, per_part=True):
            frame = pl.from_arrow(table)
            assert isinstance(frame, pl.DataFrame)
            yield frame.lazy()
        return
    frames: list[pl.LazyFrame] = []
    held = 0
    for part, refs in parts.items():
        size = sum(ref.bytes or 0 for ref in refs)  # as read: verified_bytes checks it
        if frames and held + size > SCAN_BYTES:
            yield pl.concat(frames, rechunk=False)
            frames, held = [], 0
        sources: list[IO[bytes]] = [verified_source(corpus.snapshot, ref) for ref in refs]
        held += size
        keys = {"dataset": corpus.dataset.name, "config": part.config, "split": part.split}
        frames.append(
            pl.scan_parquet(sources)
            .with_columns(pl.lit(value, pl.String).alias(key) for key, value in keys.items())
            .select([*keys, *columns])
        )
    if frames:  # one plan: polars reads these parts in parallel
        yield pl.concat(frames, rechunk=False)


def verified_source(snapshot: Snapshot, ref: FileRef) -> io.BytesIO:
    """A table file's bytes checked against the manifest
    (:meth:`convbank.store.Snapshot.verified_bytes`), its footer's schema version and
    ``meta`` structure too, for polars to read."""
    import polars as pl

    data = io.BytesIO(snapshot.verified_bytes(ref))
    held = pl.read_parquet_metadata(data)
    data.seek(0)
    version = held.get("convbank.schema_version")
    if version not in (None, SCHEMA_VERSION):
        built_by = held.get("convbank.version")
        raise SchemaVersionError.of(str(ref.path), ref.dataset, built_by, version, SCHEMA_VERSION)
    structure = held.get(STRUCTURE_KEY.decode())
    problem = structure_problem(ref, None if structure is None else structure.encode())
    if problem is not None:
        raise DamagedBankError(damaged(ref, problem), path=ref.path)
    return data


def confirm_structure(snapshot: Snapshot, ref: FileRef) -> None:
    """Check the ``meta`` structure the manifest records of a file against the one its
    footer holds, the footer checked against the manifest's sha256 of it: the schema of a
    scan is made from the structures of all the dataset's files, so one misstated of a split
    the query never reads would type ``meta`` otherwise (before: a key renamed in the test
    split's entry gave the train split's turns a column of nulls more). Reads the footer
    alone, without blocking (a FIFO is refused), and parses it with polars: no
    ``pyarrow.parquet``."""
    import hashlib

    import polars as pl

    try:
        fd = os.open(ref.path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise snapshot.unreadable(ref, exc) from exc
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DamagedBankError(damaged(ref, "not a regular file"), path=ref.path)
        try:
            held = footer_bytes(f)
        except (OSError, ValueError) as exc:
            raise DamagedBankError(damaged(ref, f"unreadable ({first_line(exc)})"), path=ref.path) from exc
    if ref.footer is not None and hashlib.sha256(held).hexdigest() != ref.footer:
        wrong = "corrupt (its Parquet footer differs from the manifest's)"
        raise DamagedBankError(damaged(ref, wrong), path=ref.path)
    try:
        structure = pl.read_parquet_metadata(io.BytesIO(b"PAR1" + held)).get(STRUCTURE_KEY.decode())
    except Exception as exc:  # polars' own errors: a footer polars cannot parse
        raise DamagedBankError(damaged(ref, f"unreadable ({first_line(exc)})"), path=ref.path) from exc
    problem = structure_problem(ref, None if structure is None else structure.encode())
    if problem is not None:
        raise DamagedBankError(damaged(ref, problem), path=ref.path)


def lazy_frame(
    pieces: Callable[[list[str]], Iterator[pl.LazyFrame]],
    schema: pl.Schema,
    *,
    stored: list[str],
    views: list[str],
    detail: str,
) -> pl.LazyFrame:
    """A lazy frame of ``schema`` whose rows are the frames ``pieces(columns)`` yields (of the
    ``stored`` columns a query needs, ``meta`` too when it uses one of the ``views`` made
    from it), each filtered and projected as the query asks before it is collected, so that
    a piece that is a Parquet scan reads only what the query keeps; ``detail`` shows in
    ``explain()``.

    >>> import polars as pl
    >>> data = pl.LazyFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    >>> lazy = lazy_frame(lambda columns: iter([data.select(columns)]), pl.Schema({"a": pl.Int64,
    ...     "b": pl.String}), stored=["a", "b"], views=[], detail="three rows")
    >>> lazy.filter(pl.col("a") > 1).select("b").collect().to_series().to_list()
    ['y', 'z']
    """
    from polars.io.plugins import register_io_source

    def read(
        with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, _batch: int | None
    ) -> Iterator[pl.DataFrame]:
        wanted = list(schema) if with_columns is None else list(with_columns)
        if predicate is not None:
            wanted += [c for c in predicate.meta.root_names() if c not in wanted]
        columns = [c for c in stored if c in wanted or (c == "meta" and any(v in wanted for v in views))]
        left = n_rows
        made = pieces(columns)
        while True:
            with _READS.one():  # polars' thread in Python: the exit waits for it
                piece = next(made, None)
                if piece is None:
                    return
                query = piece if predicate is None else piece.filter(predicate)
                query = query.select(with_columns if with_columns is not None else list(schema))
                frame = (query if left is None else query.head(left)).collect()
            if left is not None:
                left -= frame.height
            yield frame
            if left is not None and left <= 0:
                return

    return register_io_source(
        read, schema=schema, is_pure=True, explain_name="convbank", explain_detail=detail
    )
