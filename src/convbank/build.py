"""Orchestration shared by the API and the CLI: reading raw records and building the bank."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa

from convbank import catalog
from convbank.datasets import Dataset
from convbank.errors import FormatError, SourceError
from convbank.fetch import Fetcher
from convbank.model import conversations_to_tables
from convbank.store import Bank
from convbank.store.bank import Staging

__all__ = ["BuildReport", "SplitReport", "build", "read_raw", "source_paths"]

BATCH = 2000
"""Conversations per batch (one Parquet row group each): memory stays flat with corpus size."""

Progress = Callable[[str, str, str, int], None]
"""Called as ``progress(dataset, config, split, conversations_done_in_this_batch)``."""


def source_paths(dataset: Dataset, config: str | None, fetcher: Fetcher) -> dict[str, Path]:
    """Fetch (or find) every file a config needs, optional files where they can be had."""
    files = dataset.required_files(config)
    optional = [dataset.file(n) for n in dataset.optional_files]
    return fetcher.fetch(dataset, [*files, *optional])


def read_raw(
    name: str,
    config: str | None = None,
    split: str | None = None,
    *,
    fetcher: Fetcher | None = None,
) -> Iterator[tuple[str, str, Any]]:
    """Yield ``(config, split, raw_record)`` for the source records of a dataset, streamed."""
    dataset = catalog.get(name)
    fetcher = fetcher or Fetcher()
    dataset.config(config)
    for cfg in dataset.stored_configs(config):
        splits = dataset.splits(cfg.name, split) if split else list(cfg.splits)
        paths = fetcher.fetch(
            dataset, {f.name: f for s in splits for f in dataset.files_for(cfg.name, s)}.values()
        )
        for s in splits:
            for record in dataset.read(paths, cfg.name, s):
                yield cfg.name, s, record


@dataclass
class SplitReport:
    """What a build wrote for one split."""

    dataset: str
    config: str
    split: str
    conversations: int
    participants: int
    turns: int
    annotations: int
    expected: int | None
    seconds: float


@dataclass
class BuildReport:
    """The outcome of a build: what was written and, per dataset, what could not be."""

    splits: list[SplitReport] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether nothing failed."""
        return not self.failures


def build(
    names: Sequence[str] | None = None,
    *,
    config: str | None = None,
    fetcher: Fetcher | None = None,
    bank: Bank | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH,
    engine: Any = None,
) -> BuildReport:
    """Fetch, read, map and store datasets into the bank, one stored config at a time.

    A config whose sources cannot be had (not found locally, offline, download failed) is
    reported in :attr:`BuildReport.failures` under ``dataset/config`` and the others are
    built; format and checksum errors raise (the bank keeps what it had). Without ``names``,
    every dataset of the catalog is tried. ``engine`` reads and maps the sources: the local
    one by default, or :class:`convbank.engines.spark.SparkEngine`.
    """
    fetcher = fetcher or Fetcher()
    bank = bank or Bank()
    datasets = [catalog.get(n) for n in (names or catalog.names())]
    if config is not None:
        for ds in datasets:
            ds.config(config)
    report = BuildReport()
    start = time.perf_counter()
    with _collector_paused():
        _build_all(
            datasets,
            report,
            config=config,
            fetcher=fetcher,
            bank=bank,
            progress=progress,
            batch_size=batch_size,
            engine=engine,
        )
    report.seconds = time.perf_counter() - start
    return report


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while mapping: builds allocate millions of
    short-lived containers (none in cycles) and the collector would rescan them again and
    again (measured: to_builtins 3x slower at PEC scale). Reference counting still frees them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build_all(
    datasets: list[Dataset],
    report: BuildReport,
    *,
    config: str | None,
    fetcher: Fetcher,
    bank: Bank,
    progress: Progress | None,
    batch_size: int,
    engine: Any,
) -> None:
    for ds in datasets:
        for cfg in ds.stored_configs(config):
            try:
                paths = source_paths(ds, cfg.name, fetcher)
            except SourceError as exc:
                report.failures[f"{ds.name}/{cfg.name}"] = str(exc)
                continue
            report.splits.extend(
                _build_config(
                    ds,
                    cfg.name,
                    paths,
                    bank=bank,
                    progress=progress,
                    batch_size=batch_size,
                    engine=engine or LocalEngine(),
                )
            )


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
    the raw table, ``batch_size`` conversations per batch."""
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


def write_batch(
    staging: Staging,
    ds: Dataset,
    config: str,
    split: str,
    tables: dict[str, pa.Table],
    *,
    seen: dict[str, tuple[str, int]],
    counts: dict[str, int],
    progress: Progress | None,
    where: Callable[[str], str] = lambda split: split,
) -> None:
    """Write one mapped batch (one row group per table), checking that its ids are unique
    within the dataset, and add its rows to the split's ``counts``. ``seen`` maps every id
    written so far to its (split, record); ``where(split)`` names a split's source."""
    written = counts["conversations"]
    for position, cid in enumerate(tables["conversations"].column("conversation_id").to_pylist()):
        first = seen.get(cid)
        if first is not None:
            raise FormatError(
                f"{where(split)}: record {written + position} repeats conversation id {cid!r} "
                f"(first seen at record {first[1]} of {where(first[0])}); ids must be unique "
                f"within a dataset"
            )
        seen[cid] = (split, written + position)
    for name, table in tables.items():
        staging.write(name, split, table)
        if name in counts:
            counts[name] += table.num_rows
    if progress:
        progress(ds.name, config, split, tables["conversations"].num_rows)


class LocalEngine:
    """Reads and maps in this process, split after split, streaming in batches."""

    name = "local"

    def config_batches(
        self, ds: Dataset, paths: dict[str, Path], config: str, batch_size: int
    ) -> Iterator[tuple[str, dict[str, pa.Table]]]:
        """``(split, tables)`` for every batch of every split, in source order."""
        for split in ds.config(config).splits:
            for tables in map_batches(
                ds, ds.read(paths, config, split), config, split, start=0, batch_size=batch_size
            ):
                yield split, tables


def _build_config(
    ds: Dataset,
    config: str,
    paths: dict[str, Path],
    *,
    bank: Bank,
    progress: Progress | None,
    batch_size: int,
    engine: Any,
) -> list[SplitReport]:
    reports = []
    seen: dict[str, tuple[str, int]] = {}

    def where(split: str) -> str:
        files = [str(paths[f.name]) for f in ds.files_for(config, split) if f.name in paths]
        return f"{', '.join(files)} ({ds.name}/{config}/{split})"

    entry: dict[str, Any] = {"splits": {}, "sources": {n: str(p) for n, p in paths.items()}}
    splits = list(ds.config(config).splits)
    counts = {s: dict.fromkeys(("conversations", "participants", "turns", "annotations"), 0) for s in splits}
    seconds = dict.fromkeys(splits, 0.0)
    with bank.lock(), bank.stage(ds.name, config) as staging:
        t0 = time.perf_counter()
        for split, tables in engine.config_batches(ds, paths, config, batch_size):
            write_batch(
                staging,
                ds,
                config,
                split,
                tables,
                seen=seen,
                counts=counts[split],
                progress=progress,
                where=where,
            )
            now = time.perf_counter()
            seconds[split] += now - t0
            t0 = now
        for split in splits:
            if counts[split]["conversations"] == 0:
                raise FormatError(
                    f"{where(split)}: the source has no records; expected the publisher's file "
                    "with at least one — re-fetch it or check that it is the right one"
                )
            expected = ds.config(config).splits[split]
            entry["splits"][split] = {
                **counts[split],
                "expected": expected,
                "file_meta": ds.file_meta(paths, config, split),
            }
            c = counts[split]
            reports.append(
                SplitReport(
                    ds.name,
                    config,
                    split,
                    c["conversations"],
                    c["participants"],
                    c["turns"],
                    c["annotations"],
                    expected,
                    seconds[split],
                )
            )
        for table_name, table in ds.extra_tables(paths, config):
            staging.write(table_name, "all", table)
        bank.commit(staging, entry)
    return reports
