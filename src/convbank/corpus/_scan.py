""":meth:`convbank.Corpus.scan`: a polars ``LazyFrame`` served from bytes the bank verified.

polars' own Parquet reader checks neither page checksums nor the files against the
manifest, so the frame is a polars IO source (``register_io_source``) over the corpus's own
reader instead: at ``collect()`` each file is read once, checked against the manifest's size
and sha256 (:meth:`convbank.store.Snapshot.read_verified`), and only the columns the query
needs are decoded; the rows are those of :meth:`convbank.Corpus.to_arrow` (the selection's
order and repeats, typed ``meta``), filtered by the query's predicate piece by piece.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

__all__ = ["lazy_frame"]


def lazy_frame(
    pieces: Callable[[list[str]], Iterator[pa.Table]],
    schema: pl.Schema,
    *,
    stored: list[str],
    views: list[str],
    detail: str,
) -> pl.LazyFrame:
    """A lazy frame of ``schema`` whose rows are the tables ``pieces(columns)`` yields (the
    ``stored`` columns a query needs, ``meta`` too when it uses one of the ``views`` made
    from it), filtered and projected as the query asks; ``detail`` shows in ``explain()``.

    >>> import polars as pl, pyarrow as pa
    >>> data = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    >>> lazy = lazy_frame(lambda columns: iter([data.select(columns)]), pl.Schema({"a": pl.Int64,
    ...     "b": pl.String}), stored=["a", "b"], views=[], detail="three rows")
    >>> lazy.filter(pl.col("a") > 1).select("b").collect().to_series().to_list()
    ['y', 'z']
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    def read(
        with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, _batch: int | None
    ) -> Iterator[pl.DataFrame]:
        wanted = list(schema) if with_columns is None else list(with_columns)
        if predicate is not None:
            wanted += [c for c in predicate.meta.root_names() if c not in wanted]
        columns = [c for c in stored if c in wanted or (c == "meta" and any(v in wanted for v in views))]
        left = n_rows
        for piece in pieces(columns):
            frame = pl.from_arrow(piece)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            frame = frame.select(with_columns if with_columns is not None else list(schema))
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame
            if left is not None and left <= 0:
                return

    return register_io_source(
        read, schema=schema, is_pure=True, explain_name="convbank", explain_detail=detail
    )
