"""The local engine: reads and maps in this process, split after split, streaming in batches."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from convbank._workers import map_in_order
from convbank.datasets import Dataset, Part, Shard
from convbank.engines import Batches, WrittenPiece
from convbank.store.bank import Staging

__all__ = ["BATCH", "PIECE_BYTES", "LocalEngine", "map_batches", "pieces"]

BATCH = 2000
"""Conversations per batch (one Parquet row group each): memory stays flat with corpus size."""


def map_batches(
    ds: Dataset,
    records: Iterator[Any],
    part: Part,
    *,
    start: int,
    batch_size: int = BATCH,
) -> Iterator[dict[str, pa.Table]]:
    """Map raw records (the first at source position ``start``) onto the unified tables and
    the raw table, ``batch_size`` conversations per batch. Every engine maps this way. What
    the dataset's code hands back is checked here (:func:`~convbank.engines._checked.mapped_problem`):
    anything else is a ``TypeError`` that the build reports as the dataset's (a plugin's) fault."""
    from convbank.engines._checked import mapped_problem, records_problem

    index = start
    problem = records_problem(records)
    if problem is not None:
        raise TypeError(problem)
    records = iter(records)  # a list, read from its start once (never its first batch again and again)
    while batch := list(islice(records, batch_size)):
        tables = ds.map_batch(batch, part, index)
        problem = mapped_problem(ds, batch, part, index, tables)
        if problem is not None:
            raise TypeError(problem)
        yield tables
        index += len(batch)


PIECE_BYTES = 8 * 2**20
"""Source bytes per piece when a splittable file (PEC's text) is written by several
processes; a worker holds one batch of its piece at a time. A config of more than this is
built by the workers: a synthetic PEC of 30,000 conversations (15 MB) in 1.7 s on 2 cores
where one process took 2.7 s (16 MiB, the size before, kept it in one process; measured
here)."""


def pieces(
    ds: Dataset, paths: Mapping[str, Path], config: str, per_split: int | None = None
) -> list[tuple[str, Shard, bool]]:
    """The pieces the local engine's workers write, in order: ``(split, shard, last)``,
    ``last`` true for a split's last piece. One piece a split when the config's sources are
    at most :data:`PIECE_BYTES`; otherwise a split of ``n`` bytes is cut in ``ceil(n /
    PIECE_BYTES)`` pieces (``per_split``: that many instead) where the dataset can cut it
    (:meth:`Dataset.shards`). An engine that writes these pieces, piece ``i`` as number
    ``i``, writes the local engine's bank file for file::

        pieces(catalog.get("casino"), paths, "default")   # [("train", None, True), ...]
    """
    splits = list(ds.config(config).splits)
    sizes = {split: ds.split_bytes(paths, Part(config, split)) for split in splits}
    out: list[tuple[str, Shard, bool]] = []
    for split in splits:
        count = per_split or (1 if sum(sizes.values()) <= PIECE_BYTES else -(-sizes[split] // PIECE_BYTES))
        shards = ds.shards(paths, Part(config, split), count) if count > 1 else [None]
        out += [(split, shard, i == len(shards) - 1) for i, shard in enumerate(shards)]
    return out


def _write_piece(task: tuple[str, Mapping[str, Path], str, str, Shard, int, int, Path, int]) -> WrittenPiece:
    """A worker's job: map one piece of a split and write it, as piece ``number`` of each
    table, into the build's staging folder (the cyclic collector paused; one batch in
    memory at a time)."""
    name, paths, config, split, shard, start, batch_size, root, number = task
    from convbank import catalog

    ds = catalog.get(name)
    staging = Staging(root, name, config)
    ids: list[str] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        part = Part(config, split)
        records = ds.read_shard(paths, part, shard)
        for tables in map_batches(ds, records, part, start=start, batch_size=batch_size):
            ids += tables["conversations"].column("conversation_id").to_pylist()
            staging.write_batch(split, tables, piece=number)
        staging.close()
    except BaseException:
        staging.abandon()
        raise
    finally:
        if enabled:
            gc.enable()
    return WrittenPiece(dict(staging.rows), ids)


class LocalEngine:
    """Reads and maps on this machine, split after split, streaming in batches. A split
    whose file can be cut at record boundaries (PEC's text files, :meth:`Dataset.shards`)
    and is larger than one piece is mapped and written by ``workers`` processes (default:
    every core): every split of a config larger than one piece goes to them, in pieces
    (whole files where a dataset cannot cut them), each written into the build's staging
    folder; a small config is read in this process."""

    name: ClassVar[str] = "local"
    options: ClassVar[tuple[str, ...]] = ("workers",)

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> LocalEngine:
        """The local engine with ``workers`` processes (default: every core)."""
        return cls(options.get("workers"))

    def config_batches(
        self,
        ds: Dataset,
        paths: Mapping[str, Path],
        config: str,
        batch_size: int,
        staging: Staging | None = None,
    ) -> Batches:
        """``(split, tables)`` for every batch of every split, in source order; a split cut
        in pieces is written by the workers into ``staging`` (``(split, piece)``)."""
        splits = list(ds.config(config).splits)
        sizes = {split: ds.split_bytes(paths, Part(config, split)) for split in splits}
        if staging is None or self.workers == 1 or sum(sizes.values()) <= PIECE_BYTES:
            for split in splits:  # small, or one core: in this process
                part = Part(config, split)
                for tables in map_batches(ds, ds.read(paths, part), part, start=0, batch_size=batch_size):
                    yield split, tables
            return
        tasks = []
        done: dict[str, int] = {}  # source positions (hence ids) continue across a split's pieces
        for number, (split, shard, last) in enumerate(pieces(ds, paths, config)):
            start = done.get(split, 0)
            if not last:
                done[split] = start + ds.count_shard(paths, Part(config, split), shard)
            tasks.append(
                (ds.name, dict(paths), config, split, shard, start, batch_size, staging.root, number)
            )
        for task, piece in zip(
            tasks, map_in_order(_write_piece, tasks, min(self.workers, len(tasks))), strict=True
        ):
            yield task[3], piece
