"""Parquet storage with atomic replacement.

Layout: ``<root>/<table>/dataset=<d>/config=<c>/split=<s>/part-0.parquet`` for the four
unified tables, each ``<dataset>_raw`` table and side tables such as ``curiosity_facts``;
``<root>/manifest.json`` records what is built. A build writes one dataset/config into a
staging folder; only when everything is written does a journalled swap move it into place,
so a failed or interrupted build leaves the previous bank as it was (an interrupted swap is
completed by the next process that takes the lock).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from convbank._atomic import atomic_write_text
from convbank.errors import NotBuiltError
from convbank.model import SCHEMA_VERSION

__all__ = ["Bank", "Staging"]

PART = "part-0.parquet"


def _atomic_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True))


def partition(dataset: str, config: str, split: str | None = None) -> Path:
    """The Hive partition path of a dataset/config (and split)."""
    path = Path(f"dataset={dataset}") / f"config={config}"
    return path / f"split={split}" if split is not None else path


class Staging:
    """Parquet writers for one dataset/config being built; nothing is visible until commit."""

    def __init__(self, root: Path, dataset: str, config: str) -> None:
        self.root = root
        self.dataset = dataset
        self.config = config
        self._writers: dict[tuple[str, str], pq.ParquetWriter] = {}
        self.tables: set[str] = set()

    def write(self, table: str, split: str, data: pa.Table) -> None:
        """Append rows to ``table`` for ``split`` (one row group per call)."""
        key = (table, split)
        writer = self._writers.get(key)
        if writer is None:
            path = self.root / table / partition(self.dataset, self.config, split) / PART
            path.parent.mkdir(parents=True, exist_ok=True)
            schema = data.schema.with_metadata(
                {
                    **(data.schema.metadata or {}),
                    b"convbank.schema_version": SCHEMA_VERSION.encode(),
                    b"convbank.table": table.encode(),
                }
            )
            writer = pq.ParquetWriter(path, schema, compression="zstd")
            self._writers[key] = writer
            self.tables.add(table)
        writer.write_table(data.replace_schema_metadata(writer.schema.metadata))

    def close(self) -> None:
        """Close every writer (files become complete Parquet files)."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


class Bank:
    """The bank folder: its tables, manifest, lock and atomic swaps."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # ------------------------------------------------------------------ reading
    @property
    def manifest_path(self) -> Path:
        """Where the manifest is."""
        return self.root / "manifest.json"

    def manifest(self) -> dict[str, Any]:
        """What is built: ``{"schema_version", "datasets": {name: {"configs": {...}}}}``."""
        try:
            data: dict[str, Any] = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"schema_version": SCHEMA_VERSION, "datasets": {}}
        return data

    def built(self) -> dict[str, dict[str, Any]]:
        """Built datasets with their manifest entries."""
        datasets: dict[str, dict[str, Any]] = self.manifest()["datasets"]
        return datasets

    def split_info(self, dataset: str, config: str, split: str) -> dict[str, Any]:
        """The manifest entry of one split, or :class:`NotBuiltError`."""
        try:
            info: dict[str, Any] = self.built()[dataset]["configs"][config]["splits"][split]
        except KeyError:
            raise NotBuiltError(
                f"{dataset}/{config}/{split} is not in the bank at {self.root}; "
                f"run `convbank build {dataset}` first"
            ) from None
        return info

    def table_files(self, table: str) -> list[Path]:
        """Every Parquet file of a table."""
        return sorted((self.root / table).glob(f"dataset=*/config=*/split=*/{PART}"))

    def tables(self) -> list[str]:
        """Names of the tables that have at least one file."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and not p.name.startswith(".") and self.table_files(p.name)
        )

    def file(self, table: str, dataset: str, config: str, split: str) -> Path:
        """The Parquet file of a table partition (which may not exist)."""
        return self.root / table / partition(dataset, config, split) / PART

    # ------------------------------------------------------------------ writing
    @contextmanager
    def lock(self, timeout: float = -1) -> Iterator[None]:
        """Hold the bank's lock (builds of the bank are serialised); finish an interrupted swap."""
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root / ".lock"), timeout=timeout):
            self._recover()
            yield

    @contextmanager
    def stage(self, dataset: str, config: str) -> Iterator[Staging]:
        """Stage a dataset/config; call :meth:`commit` inside to make it visible. On error
        the staging folder is removed and the bank is untouched."""
        folder = self.root / ".staging" / uuid.uuid4().hex
        folder.mkdir(parents=True)
        staging = Staging(folder, dataset, config)
        try:
            yield staging
        finally:
            staging.close()
            if not self._journal_names(folder):
                shutil.rmtree(folder, ignore_errors=True)

    def _journal_names(self, folder: Path) -> bool:
        """Whether an unfinished swap still needs this staging folder."""
        path = self.root / ".journal.json"
        return path.exists() and json.loads(path.read_text(encoding="utf-8"))["staging"] == str(folder)

    def commit(self, staging: Staging, entry: dict[str, Any]) -> None:
        """Swap a staged dataset/config into the bank and record ``entry`` in the manifest."""
        staging.close()
        old = {
            t for t in self.tables() if (self.root / t / partition(staging.dataset, staging.config)).exists()
        }
        manifest = self.manifest()
        manifest["schema_version"] = SCHEMA_VERSION
        ds = manifest["datasets"].setdefault(staging.dataset, {"configs": {}})
        ds["configs"][staging.config] = entry
        ds["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        journal = {
            "staging": str(staging.root),
            "dataset": staging.dataset,
            "config": staging.config,
            "tables": sorted(old | staging.tables),
            "manifest": manifest,
        }
        _atomic_json(self.root / ".journal.json", journal)
        self._recover()

    def _recover(self) -> None:
        """Complete the swap a journal describes (idempotent)."""
        path = self.root / ".journal.json"
        if not path.exists():
            return
        journal = json.loads(path.read_text(encoding="utf-8"))
        staging = Path(journal["staging"])
        trash = self.root / ".trash" / uuid.uuid4().hex
        part = partition(journal["dataset"], journal["config"])
        for table in journal["tables"]:
            dest = self.root / table / part
            staged = staging / table / part
            if (staged.exists() or not (staging / table).exists()) and dest.exists():
                (trash / table).mkdir(parents=True, exist_ok=True)
                os.replace(dest, trash / table / "gone")
            if staged.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, dest)
        _atomic_json(self.manifest_path, journal["manifest"])
        path.unlink()
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
        for empty in (self.root / t / f"dataset={journal['dataset']}" for t in journal["tables"]):
            if empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
