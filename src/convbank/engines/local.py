"""The local engine: reads and maps in this process, split after split, streaming in batches."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from convbank.datasets import Dataset
from convbank.engines import Batches
from convbank.model import conversations_to_tables

__all__ = ["BATCH", "LocalEngine", "map_batches"]

BATCH = 2000
"""Conversations per batch (one Parquet row group each): memory stays flat with corpus size."""


def map_batches(
    ds: Dataset,
    records: Iterator[Any],
    config: str,
    split: str,
    *,
    start: int,
    batch_size: int = BATCH,
) -> Iterator[dict[str, pa.Table]]:
    """Map raw records (the first at source position ``start``) onto the unified tables and
    the raw table, ``batch_size`` conversations per batch. Every engine maps this way."""
    raw_schema = ds.raw_schema
    index = start
    while batch := list(islice(records, batch_size)):
        convs = [ds.to_conversation(r, config, split, index + i) for i, r in enumerate(batch)]
        tables = conversations_to_tables(convs)
        rows = [ds.raw_row(r) for r in batch]
        tables[f"{ds.name}_raw"] = pa.Table.from_pylist(
            [
                {"conversation_id": c.conversation_id, "source_index": c.source_index, **row}
                for c, row in zip(convs, rows, strict=True)
            ],
            schema=raw_schema,
        )
        index += len(batch)
        yield tables


class LocalEngine:
    """Reads and maps in this process, split after split, streaming in batches."""

    name: ClassVar[str] = "local"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> LocalEngine:
        """The local engine (it takes no options)."""
        return cls()

    def config_batches(self, ds: Dataset, paths: Mapping[str, Path], config: str, batch_size: int) -> Batches:
        """``(split, tables)`` for every batch of every split, in source order."""
        for split in ds.config(config).splits:
            for tables in map_batches(
                ds, ds.read(paths, config, split), config, split, start=0, batch_size=batch_size
            ):
                yield split, tables
