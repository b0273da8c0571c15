"""Apache Spark for builds and queries (``convbank[spark]``, Java 17+).

``build(..., engine=SparkEngine("local[2]"))`` reads and maps source shards in Spark tasks
(PEC's text files cut at conversation ends; one task per file elsewhere) and the driver
writes the same bank as the local engine: same rows, schema and ids. :func:`sql` runs the
bank's views on Spark SQL.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from convbank import catalog
from convbank.datasets import Dataset, Part
from convbank.engines import Batches
from convbank.engines.local import map_batches
from convbank.errors import QueryError, require
from convbank.store import Bank, Staging

__all__ = ["SparkEngine", "session", "sql"]

Task = tuple[str, int, Any]
"""(split, shard number, shard) of one piece of a config's sources."""


def session(master: str = "local[*]") -> Any:
    """A Spark session for convbank (UI off, partition values kept as strings)."""
    require("pyspark", "spark", "The Spark engine")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(master)
        .appName("convbank")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


def _map(
    name: str, paths: Mapping[str, Path], config: str, batch_size: int, tasks: Iterable[tuple[str, Any, int]]
) -> Iterator[tuple[str, dict[str, pa.Table]]]:
    ds = catalog.get(name)
    for split, shard, start in tasks:
        part = Part(config, split)
        records = ds.read_shard(paths, part, shard)
        for tables in map_batches(ds, records, part, start=start, batch_size=batch_size):
            yield split, tables


class SparkEngine:
    """Reads and maps source shards in Spark tasks; results come back in source order. Also
    runs SQL over the bank's views on Spark SQL (:meth:`sql`)."""

    name: ClassVar[str] = "spark"
    options: ClassVar[tuple[str, ...]] = ("master", "shards")

    def __init__(self, master: str = "local[*]", shards_per_file: int | None = None) -> None:
        self.master = master
        self.shards_per_file = shards_per_file

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> SparkEngine:
        """The engine for ``master`` (a Spark master URL) and ``shards`` (pieces per splittable
        file) when given."""
        return cls(options.get("master") or "local[*]", shards_per_file=options.get("shards"))

    def sql(self, query: str, *, bank: Bank) -> pa.Table:
        """Run one read-only query over the bank's views on this engine's master."""
        return sql(query, bank=bank, master=self.master)

    def config_batches(
        self,
        ds: Dataset,
        paths: Mapping[str, Path],
        config: str,
        batch_size: int,
        staging: Staging | None = None,
    ) -> Batches:
        """``(split, tables)`` for every batch, split after split, in source order (the
        driver writes them; ``staging`` is not used)."""
        sc = session(self.master).sparkContext
        per_file = self.shards_per_file or sc.defaultParallelism
        tasks: list[Task] = [
            (split, n, shard)
            for split in ds.config(config).splits
            for n, shard in enumerate(ds.shards(paths, Part(config, split), per_file))
        ]
        starts = [0] * len(tasks)
        done: dict[str, int] = {}
        for i, (split, _, shard) in enumerate(tasks):
            if shard is not None:  # source positions continue across the pieces of a file
                starts[i] = done.get(split, 0)
                done[split] = starts[i] + ds.count_shard(paths, Part(config, split), shard)
        work = [(split, shard, start) for (split, _, shard), start in zip(tasks, starts, strict=True)]
        rdd = sc.parallelize(work, len(work)).mapPartitions(partial(_map, ds.name, paths, config, batch_size))
        yield from rdd.toLocalIterator()


def sql(query: str, *, bank: Bank, master: str = "local[*]") -> pa.Table:
    """Run one read-only query over the bank's views on Spark SQL (``meta`` stays a JSON
    string: use ``get_json_object``)."""
    import duckdb

    from convbank.store import is_read_only

    with duckdb.connect() as con:
        is_read_only(con, query)
    with bank.snapshot() as snapshot:
        if not snapshot.tables():
            raise QueryError(
                f"the bank at {bank.root} is empty; run `convbank build` first", sql=query, path=bank.root
            )
        snapshot.check()
        spark = session(master)
        for table in snapshot.tables():
            folder = str(bank.root / table)
            files = [str(r.path) for r in snapshot.refs(table)]
            frame = spark.read.option("basePath", folder).parquet(*files)
            first = ["dataset", "config", "split"]
            frame.select(*first, *[c for c in frame.columns if c not in first]).createOrReplaceTempView(table)
        try:
            return spark.sql(query).toArrow()
        except Exception as exc:  # Spark's AnalysisException and parse errors
            raise QueryError(f"Spark SQL error: {str(exc).splitlines()[0]}", sql=query) from exc
