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

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

__all__ = ["lazy_frame"]


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
        for piece in pieces(columns):
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
