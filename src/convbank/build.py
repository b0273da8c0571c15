"""Orchestration shared by the API and the CLI: reading raw records and building the bank."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from convbank import catalog
from convbank._archive import intact
from convbank.datasets import Dataset, Part
from convbank.datasets._declared import counts_of
from convbank.engines import Engine, WrittenPiece
from convbank.engines._checked import checked_batches, side_tables
from convbank.engines.local import BATCH, LocalEngine
from convbank.errors import (
    BuildError,
    ChecksumError,
    ConvbankError,
    DamagedBankError,
    FormatError,
    PluginError,
    SetupError,
    SourceError,
)
from convbank.fetch import Fetcher
from convbank.model.schema import paused_gc
from convbank.store import Bank
from convbank.store.bank import Staging, imported_clash
from convbank.store.manifest import ConfigEntry, SplitEntry

__all__ = ["BuildReport", "SplitReport", "build", "read_raw", "source_paths"]

Progress = Callable[[str, str, str, int], None]
"""Called as ``progress(dataset, config, split, conversations_done_in_this_batch)``."""


def source_paths(
    dataset: Dataset, config: str | None, fetcher: Fetcher, *, private: bool = True
) -> dict[str, Path]:
    """Fetch (or find) every file a config needs, optional files where they can be had: to
    read, verified private copies (see :meth:`convbank.fetch.Fetcher.fetch`); with
    ``private=False``, the files' own paths."""
    files = dataset.required_files(config)
    optional = [dataset.file(n) for n in dataset.optional_files]
    return fetcher.fetch(dataset, [*files, *optional], private=private)


VOUCHED = 1_000
"""Records :func:`read_raw` reads before it vouches for them (a ``stat`` of each file of an
archive's extraction) and yields them."""


def read_raw(
    name: str,
    config: str | None = None,
    split: str | None = None,
    *,
    fetcher: Fetcher | None = None,
) -> Iterator[tuple[str, str, Any]]:
    """Yield ``(config, split, raw_record)`` for the source records of a dataset, streamed;
    ``config`` and ``split`` select as :meth:`convbank.datasets.Dataset.parts` says (None:
    every one). Records read from an archive's cached extraction are yielded
    :data:`VOUCHED` at a time, once the extraction is found unchanged since its check
    (before: ``convbank raw`` printed a file of it edited after the fetch's check as the
    publisher's records)::

        for config, split, record in read_raw("casino", split="valid"):
            print(record.dialogue_id)
    """
    dataset = catalog.get(name)
    fetcher = fetcher or Fetcher()
    parts = dataset.parts(config, split)
    for cfg in dict.fromkeys(p.config for p in parts):
        splits = [p.split for p in parts if p.config == cfg]
        paths = fetcher.fetch(
            dataset, {f.name: f for s in splits for f in dataset.sources_for(Part(cfg, s))}.values()
        )
        shown = {n: fetcher.origin(p) for n, p in paths.items()}
        try:
            for s in splits:
                records = iter(dataset.read(paths, Part(cfg, s)))
                while chunk := list(islice(records, VOUCHED)):
                    _read_as_extracted(paths, fetcher.extracted, shown)
                    yield from ((cfg, s, record) for record in chunk)
        except ConvbankError as exc:  # named after the files, not their private copies
            fetcher.name_origins(exc)
            raise


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


_BANK_WIDE = (BuildError, DamagedBankError, SetupError, KeyboardInterrupt)
"""Errors of the bank or the machine (a held lock, a full disk, a damaged bank, an unusable
home), not of one dataset's sources, and Ctrl-C or a signal: they stop a build at once,
whatever ``fail_fast`` says. Anything else a plugin's code raises is its fault."""


@dataclass
class BuildReport:
    """The outcome of a build, per ``dataset/config``: the splits written (:attr:`splits`),
    the configs skipped because their sources cannot be had (:attr:`failures`) and those that
    failed (:attr:`errors`: a bad or mismatched source file; the bank keeps their previous
    content)::

        report = BuildReport()
        try:
            build(["casino", "curiosity"], report=report)
        except ConvbankError:
            print(report.errors)   # {"curiosity/default": FormatError("... repeats ...")}
        print(report.exit_code)    # 2: the highest exit code of the failures
    """

    splits: list[SplitReport] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    """Skipped: ``{"dataset/config": why its sources cannot be had}`` (exit code 3)."""
    seconds: float = 0.0
    errors: dict[str, ConvbankError] = field(default_factory=dict)
    """Failed: ``{"dataset/config": the error}``, in build order."""
    bank: Path | None = None
    """The folder of the bank built into, as the build opened it (a later ``CONVBANK_HOME``
    or working folder that a plugin's code set names another)."""

    @property
    def ok(self) -> bool:
        """Whether everything was built: nothing skipped, nothing failed."""
        return not self.failures and not self.errors

    @property
    def exit_code(self) -> int:
        """The command line's exit code for the failures: the highest of their codes (2 for a
        bad source file, 1 for a failed build...), 0 when none failed (skipped configs are
        not failures: the ``build`` command decides what they mean)."""
        return max((e.exit_code for e in self.errors.values()), default=0)


def build(
    names: Sequence[str] | None = None,
    *,
    config: str | None = None,
    fetcher: Fetcher | None = None,
    bank: Bank | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH,
    engine: Engine | None = None,
    report: BuildReport | None = None,
    fail_fast: bool = False,
) -> BuildReport:
    """Fetch, read, map and store datasets into the bank, one stored config at a time, each
    committed on its own (a config that fails leaves that config's previous content intact).

    A config whose sources cannot be had (not found locally, offline, download failed) is
    skipped, in :attr:`BuildReport.failures` under ``dataset/config``. A config that fails (a
    bad source file, a checksum, repeated ids) is in :attr:`BuildReport.errors` and the build
    goes on with the others; once every dataset was tried, the first of these errors is
    raised (the ``report`` passed in holds them all). ``fail_fast``: raise at the first
    failure instead, leaving the rest unbuilt. Errors of the bank itself (its lock held, a
    full disk, a damaged bank, an unusable home) always stop at once. Without ``names``,
    every dataset of the catalog is tried; ``config`` None builds every stored config (a
    union config builds its parts). ``engine`` reads and maps the sources: the local one by
    default, or any :class:`convbank.engines.Engine` (such as
    :class:`convbank.engines.spark.SparkEngine`). ``report``: a report to fill as configs are
    built, so that a caller still has what was built when a later config raises::

        report = BuildReport()
        try:
            build(["ccpe", "curiosity"], report=report)
        finally:
            print(len(report.splits), "splits built")
    """
    fetcher = fetcher or Fetcher()
    bank = bank or Bank()
    datasets = [catalog.get(n) for n in (names or catalog.names())]
    for ds in datasets:
        ds.parts(config)  # an unknown config name fails before anything is built
        if (refused := ds.without_sources()) is not None:  # an import is not built from files
            raise refused
    held = bank.manifest().datasets
    for ds in datasets:  # a plugin installed after an import of its name never builds over it
        if ds.name in held and held[ds.name].imported is not None:
            raise PluginError(imported_clash(ds.name, catalog.catalog.origin(ds.name)), name=ds.name)
    report = report if report is not None else BuildReport()
    report.bank = bank.root
    start = time.perf_counter()
    try:
        with paused_gc():  # millions of short-lived acyclic containers while mapping
            _build_all(
                datasets,
                report,
                config=config,
                fetcher=fetcher,
                bank=bank,
                progress=progress,
                batch_size=batch_size,
                engine=engine,
                fail_fast=fail_fast,
            )
    finally:
        report.seconds = time.perf_counter() - start
    if report.errors:
        raise next(iter(report.errors.values()))
    return report


def _build_all(
    datasets: list[Dataset],
    report: BuildReport,
    *,
    config: str | None,
    fetcher: Fetcher,
    bank: Bank,
    progress: Progress | None,
    batch_size: int,
    engine: Engine | None,
    fail_fast: bool,
) -> None:
    for ds in datasets:
        for cfg in ds.stored_configs(config):
            part = f"{ds.name}/{cfg.name}"
            try:
                paths = source_paths(ds, cfg.name, fetcher)
            except SourceError as exc:
                report.failures[part] = str(exc)
                continue
            except _BANK_WIDE:
                raise
            except ConvbankError as exc:  # a checksum that differs, a bad archive
                if fail_fast:
                    raise
                report.errors[part] = exc
                continue
            except BaseException as exc:  # a plugin's own fault (sys.exit(), GeneratorExit included)
                report.errors[part] = _plugin_fault(ds, part, exc, fail_fast)
                continue
            try:
                built = _build_config(
                    ds,
                    cfg.name,
                    paths,
                    shown={n: fetcher.origin(p) for n, p in paths.items()},
                    extracted=fetcher.extracted,
                    bank=bank,
                    progress=progress,
                    batch_size=batch_size,
                    engine=engine or LocalEngine(),
                )
            except _BANK_WIDE:
                raise
            except ConvbankError as exc:  # its staging is dropped: the bank keeps what it had
                fetcher.name_origins(exc)  # named after the files, not their private copies
                if fail_fast:
                    raise
                report.errors[part] = exc
                continue
            except BaseException as exc:  # a plugin's own fault (sys.exit(), GeneratorExit included)
                report.errors[part] = _plugin_fault(ds, part, exc, fail_fast)
                continue
            report.splits.extend(built)


def _plugin_fault(ds: Dataset, part: str, exc: BaseException, fail_fast: bool) -> BuildError:
    """The one-line :class:`BuildError` (exit 1) of a plugin's dataset code that raised
    something other than a convbank error (or called ``sys.exit()``): its config fails,
    naming the plugin, and the other configs and datasets are still built (unless
    ``fail_fast``). A fault of convbank's own datasets is convbank's, re-raised with its
    traceback."""
    origin = catalog.catalog.origin(ds.name)
    if not origin.startswith("entry point"):
        raise exc
    fault = BuildError(
        f"{catalog.code_failed(origin, exc, f'building {part}')}; nothing of it was kept — report it "
        "to its authors (--debug shows the traceback)"
    )
    if fail_fast:
        raise fault from exc
    fault.__cause__ = exc
    return fault


class SeenIds:
    """The conversation ids written so far in a dataset, compactly: a 64-bit hash of each in
    NumPy arrays, 8 bytes a conversation, and of each batch only its split and first record,
    so that memory stays flat with corpus size but for those 8 bytes (before: 16, and
    :meth:`repeat` copied them five times over at the end of the build, a peak of about
    64 bytes a conversation, now 32; found by pass 21). :meth:`repeat` finds the first repeated id
    once all are written."""

    def __init__(self) -> None:
        self._hashes: list[np.ndarray] = []
        self._batches: list[tuple[int, int]] = []
        """Each batch's split (its place in :attr:`splits`) and first record."""
        self._kind: str | None = None
        self.splits: list[str] = []

    def add(self, split: str, start: int, ids: Sequence[str]) -> None:
        """Note the ids of records ``start``, ``start + 1``... of ``split``."""
        self._add(split, start, np.fromiter((hash(c) for c in ids), np.int64, count=len(ids)), "hash")

    def add_hashes(self, split: str, start: int, hashes: bytes) -> None:
        """Note the ids of records ``start``... of ``split`` by their
        :func:`convbank.engines.id_hashes` (a dataset's ids are noted one way only)."""
        self._add(split, start, np.frombuffer(hashes, np.int64), "blake2b")

    def _add(self, split: str, start: int, hashes: np.ndarray, kind: str) -> None:
        if self._kind not in (None, kind):
            raise ValueError(f"ids noted by {self._kind} cannot be compared with ids noted by {kind}")
        self._kind = kind
        if split not in self.splits:
            self.splits.append(split)
        if len(hashes):
            self._hashes.append(hashes)
            self._batches.append((self.splits.index(split), start))

    def repeat(self, id_at: Callable[[str, int], str]) -> tuple[str, str, int, str, int] | None:
        """The first repeated id in build order as (id, split, record, first split, first
        record), or None; ``id_at(split, record)`` reads an id back (equal hashes of
        different ids are told apart)."""
        if not self._hashes:
            return None
        sizes = np.cumsum([len(h) for h in self._hashes])
        hashes = np.concatenate(self._hashes)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        del ordered
        for later in sorted(order[same + 1]):  # in build order
            cid = id_at(*self._where(sizes, later))
            for earlier in np.flatnonzero(hashes[:later] == hashes[later]):
                if id_at(*self._where(sizes, earlier)) == cid:
                    return (cid, *self._where(sizes, later), *self._where(sizes, earlier))
        return None

    def _where(self, sizes: np.ndarray, at: int | np.integer) -> tuple[str, int]:
        """The split and record of the ``at``-th id noted (``sizes``: the running count of
        ids after each batch)."""
        batch = int(np.searchsorted(sizes, at, side="right"))
        code, start = self._batches[batch]
        return self.splits[code], start + int(at) - (int(sizes[batch - 1]) if batch else 0)


def write_batch(
    staging: Staging,
    ds: Dataset,
    config: str,
    split: str,
    tables: dict[str, pa.Table],
    *,
    seen: SeenIds,
    counts: dict[str, int],
    progress: Progress | None,
) -> None:
    """Write one mapped batch (one row group per table), note its ids in ``seen`` (checked
    for repeats once every batch is written) and add its rows to the split's ``counts``."""
    seen.add(split, counts["conversations"], tables["conversations"].column("conversation_id").to_pylist())
    staging.write_batch(split, tables)
    for name, table in tables.items():
        if name in counts:
            counts[name] += table.num_rows
    if progress:
        progress(ds.name, config, split, tables["conversations"].num_rows)


def _report(part: Part, dataset: str, c: dict[str, int], expected: int | None, seconds: float) -> SplitReport:
    """What the build wrote for one split, from its row counts by table."""
    rows = (c["conversations"], c["participants"], c["turns"], c["annotations"])
    return SplitReport(dataset, part.config, part.split, *rows, expected, seconds)


def _refuse_repeated_ids(
    seen: SeenIds, ids: Callable[[str, int], str], where: Callable[[str], str], files: Callable[[str], str]
) -> None:
    """A :class:`FormatError` naming the first conversation id two records share."""
    repeat = seen.repeat(ids)
    if repeat is not None:
        cid, split, position, first_split, first_position = repeat
        raise FormatError(
            f"{where(split)}: record {position} repeats conversation id {cid!r} "
            f"(first seen at record {first_position} of {where(first_split)}); ids must be "
            "unique within a dataset",
            path=files(split),
            record=position,
        )


def _build_config(
    ds: Dataset,
    config: str,
    paths: dict[str, Path],
    *,
    shown: dict[str, Path],
    extracted: dict[Path, Path] | None = None,
    bank: Bank,
    progress: Progress | None,
    batch_size: int,
    engine: Engine,
) -> list[SplitReport]:
    reports = []
    seen = SeenIds()

    def files(split: str) -> str:
        return ", ".join(str(shown[f.name]) for f in ds.sources_for(Part(config, split)) if f.name in shown)

    def where(split: str) -> str:
        return f"{files(split)} ({ds.name}/{config}/{split})"

    entry = ConfigEntry(sources={n: str(p) for n, p in shown.items()})  # the files, not the copies
    splits = list(ds.config(config).splits)
    counts = {s: dict.fromkeys(("conversations", "participants", "turns", "annotations"), 0) for s in splits}
    seconds = dict.fromkeys(splits, 0.0)
    with bank.lock(), bank.stage(ds.name, config) as staging:
        t0 = time.perf_counter()
        batches = engine.config_batches(ds, paths, config, batch_size, staging)
        for split, batch in checked_batches(engine, batches, ds, config, staging):
            if isinstance(batch, WrittenPiece):  # a worker wrote it into the staging folder
                if batch.hashes is None:
                    seen.add(split, counts[split]["conversations"], batch.ids)
                else:
                    seen.add_hashes(split, counts[split]["conversations"], batch.hashes)
                staging.adopt(batch.rows, batch.facts)
                for (table, _, _), rows in batch.rows.items():
                    if table in counts[split]:
                        counts[split][table] += rows
                if progress:
                    progress(ds.name, config, split, batch.conversations)
            else:
                write_batch(
                    staging, ds, config, split, batch, seen=seen, counts=counts[split], progress=progress
                )
            now = time.perf_counter()
            seconds[split] += now - t0
            t0 = now
        staging.close()
        _refuse_repeated_ids(seen, staging.conversation_id, where, files)
        for split in splits:
            if counts[split]["conversations"] == 0:
                raise FormatError(
                    f"{where(split)}: the source has no records; expected the publisher's file "
                    "with at least one — re-fetch it or check that it is the right one",
                    path=files(split),
                )
            part = Part(config, split)
            expected, _ = counts_of(ds, part, counts[split]["conversations"])  # checked, as validate has them
            entry.splits[split] = SplitEntry(
                **counts[split], expected=expected, file_meta=ds.file_meta(paths, part)
            )
            reports.append(_report(Part(config, split), ds.name, counts[split], expected, seconds[split]))
        for table_name, table in side_tables(ds, paths, config):
            staging.write(table_name, "all", table)
        _read_as_extracted(paths, extracted or {}, shown)
        bank.commit(staging, entry)
    return reports


def _read_as_extracted(paths: dict[str, Path], extracted: dict[Path, Path], shown: dict[str, Path]) -> None:
    """Vouch for what the build read of an archive's cached extraction: each is checked
    before it is handed out (:func:`convbank._archive.intact`) and again here, once read, so
    a file of it written, renamed over or removed meanwhile (its inode, size, mtime or ctime
    moved: nothing sets a ctime back) is a :class:`ChecksumError` naming the archive, nothing
    committed (before: an edit made after the fetch's check was built as the publisher's)."""
    for name, path in paths.items():
        target = extracted.get(path)
        if target is not None and not intact(target):
            raise ChecksumError(
                f"{shown.get(name, path)}: extracted from {name}, changed while convbank read it; "
                "nothing was kept from it — leave it alone while convbank reads it, and run the "
                "command again (it is extracted anew from the verified archive)",
                path=shown.get(name, path),
            )
