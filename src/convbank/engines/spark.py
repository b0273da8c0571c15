"""Apache Spark for builds and queries (``convbank[spark]``, Java 17+).

``build(..., engine=SparkEngine("local[2]"))`` runs one Spark task a piece of the sources
(the local engine's pieces, :func:`convbank.engines.local.pieces`: PEC's text files cut at
conversation ends), and each task maps its piece and writes its Parquet and record files
itself, the same bytes the local engine's worker writes, into a folder of its own attempt in
the build's staging folder (which every executor must reach: the bank on a shared file
system). A task sends back only small facts (file keys, rows, sha256, sizes, an 8-byte hash
a conversation id); the driver adopts one successful attempt a piece by renames, removes
every other attempt's files, and commits the manifest (one rename), so that a failed or
retried task leaves nothing and the bank equals the local engine's file for file.
:func:`sql` runs the bank's views on Spark SQL.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from convbank import catalog
from convbank.datasets import Dataset, Part, Shard
from convbank.engines import Batches, WrittenPiece, id_hashes
from convbank.engines.local import map_batches, pieces
from convbank.errors import BuildError, ConvbankError, QueryError, require
from convbank.store import Bank, Staging

__all__ = ["ATTEMPTS", "SparkEngine", "session", "sql"]

ATTEMPTS = ".attempts"
"""The folder of a build's staging folder where each task attempt writes, in a folder named
``s<stage>-p<partition>-a<attempt>-t<task attempt id>``."""

Fault = Callable[[int, int], None]
"""Called in a task with (partition, attempt) once its files are written, before it
answers: tests make attempts fail or die with it."""


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


@dataclass(frozen=True)
class _Job:
    """What every task of one config's build needs (sent with the task)."""

    dataset: str
    paths: dict[str, Path]
    config: str
    batch_size: int
    attempts: str
    fault: Fault | None = None


def _count(job: _Job, piece: tuple[str, Shard]) -> int:
    """A task's job before the build: the records of one piece (where the next one starts)."""
    split, shard = piece
    return catalog.get(job.dataset).count_shard(job.paths, Part(job.config, split), shard)


def _write(job: _Job, items: Iterable[tuple[int, str, Shard, int]]) -> Iterator[dict[str, Any]]:
    """A task's job: map its piece (number, split, shard, first source position) and write
    it, as piece ``number``, into its attempt's own folder; answer with the files' facts
    and the ids' hashes, no table data. A bad source is answered (``error``), not retried."""
    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None, "runs in a Spark task"
    attempt = (
        f"s{context.stageId()}-p{context.partitionId()}-a{context.attemptNumber()}"
        f"-t{context.taskAttemptId()}"  # unique in the application, a retried stage's too
    )
    folder = Path(job.attempts) / attempt
    folder.mkdir()  # not its parents: once the build has ended they are gone, and nothing is written
    staging = Staging(folder, job.dataset, job.config)
    ds = catalog.get(job.dataset)
    enabled = gc.isenabled()
    gc.disable()  # millions of short-lived acyclic containers while mapping, as in the local engine
    try:
        (number, split, shard, start), *more = items
        assert not more, "one piece a partition"
        part = Part(job.config, split)
        ids: list[str] = []
        records = ds.read_shard(job.paths, part, shard)
        for tables in map_batches(ds, records, part, start=start, batch_size=job.batch_size):
            ids += tables["conversations"].column("conversation_id").to_pylist()
            staging.write_batch(split, tables, piece=number)
        staging.close()
        answer = {"attempt": attempt, "number": number, "split": split, "rows": dict(staging.rows)}
        answer |= {"facts": staging.describe(), "hashes": id_hashes(ids)}
        if job.fault is not None:
            job.fault(context.partitionId(), context.attemptNumber())
    except ConvbankError as exc:  # a bad source file fails the same way on every attempt
        staging.abandon()
        shutil.rmtree(folder, ignore_errors=True)
        yield {"attempt": attempt, "error": exc}
        return
    except BaseException:
        staging.abandon()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        if enabled:
            gc.enable()
    yield answer


class SparkEngine:
    """Maps and writes the local engine's pieces in Spark tasks, each task its own files;
    the driver commits the manifest. Also runs SQL over the bank's views on Spark SQL
    (:meth:`sql`)::

        build(["pec"], engine=SparkEngine("spark://host:7077"))   # the bank on a shared path
    """

    name: ClassVar[str] = "spark"
    options: ClassVar[tuple[str, ...]] = ("master", "shards")

    def __init__(
        self, master: str = "local[*]", shards_per_file: int | None = None, *, fault: Fault | None = None
    ) -> None:
        self.master = master
        self.shards_per_file = shards_per_file
        """Pieces a splittable file is cut in; None: the local engine's pieces (about
        8 MiB of source each), hence its bank file for file."""
        self.fault = fault

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
        """``(split, piece)`` for every piece, split after split, in source order, once the
        tasks have written them all into ``staging`` (which must be given)."""
        if staging is None:
            raise ValueError("the Spark engine's tasks write into the build's staging folder; pass it")
        sc = session(self.master).sparkContext
        plan = pieces(ds, paths, config, self.shards_per_file)
        attempts = staging.root / ATTEMPTS
        attempts.mkdir()
        job = _Job(ds.name, dict(paths), config, batch_size, str(attempts), self.fault)
        group = f"convbank-{uuid.uuid4().hex}"
        sc.setJobGroup(group, f"convbank build {ds.name}/{config}", interruptOnCancel=True)
        try:
            counted = [(split, shard) for split, shard, last in plan if not last]
            counts = iter(
                sc.parallelize(counted, len(counted)).map(partial(_count, job)).collect() if counted else []
            )
            work, done = [], dict.fromkeys(ds.config(config).splits, 0)
            for number, (split, shard, last) in enumerate(plan):  # positions continue across pieces
                work.append((number, split, shard, done[split]))
                done[split] += 0 if last else next(counts)
            rdd = sc.parallelize(work, len(work)).mapPartitions(partial(_write, job))
            answers = rdd.collect()
        except Exception as exc:  # a task failed every attempt, or the cluster is gone
            bank = staging.root.parent.parent
            raise BuildError(
                f"{bank}: the Spark job building {ds.name}/{config} failed ({_one_line(exc)}; a "
                "task is given up after spark.task.maxFailures attempts); the previous bank is unchanged",
                path=bank,
            ) from exc
        finally:
            _settle(sc, group)  # no attempt still writes once this returns
            sc.setLocalProperty("spark.jobGroup.id", None)
        yield from self._adopt(answers, staging, ds.name, config)

    def _adopt(
        self, answers: list[dict[str, Any]], staging: Staging, dataset: str, config: str
    ) -> Iterator[tuple[str, WrittenPiece]]:
        """Move each piece's one answered attempt into ``staging``, remove every other
        attempt's files, then yield the pieces in order."""
        attempts = staging.root / ATTEMPTS
        for answer in answers:
            if "error" in answer:
                raise answer["error"]
        answers = sorted(answers, key=lambda a: a["number"])
        for answer in answers:
            staging.move_in(Staging(attempts / answer["attempt"], dataset, config), list(answer["rows"]))
        shutil.rmtree(attempts)  # failed, killed and duplicate attempts, and the emptied folders
        for answer in answers:
            yield answer["split"], WrittenPiece(answer["rows"], [], answer["facts"], answer["hashes"])


def _settle(sc: Any, group: str, timeout: float = 60.0) -> None:
    """Wait until no task of the job group runs (a failed job's other tasks are being
    killed; a killed task may still write for a moment)."""
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stages = [
            s for j in tracker.getJobIdsForGroup(group) if (i := tracker.getJobInfo(j)) for s in i.stageIds
        ]
        infos = [tracker.getStageInfo(s) for s in stages]
        if not any(info is not None and info.numActiveTasks for info in infos):
            return
        time.sleep(0.05)


def _one_line(exc: BaseException) -> str:
    """The gist of a failed Spark job: the Python error a task raised, else the first line::

    _one_line(PythonException("...Traceback...\nRuntimeError: boom\n"))   # "RuntimeError: boom"
    """
    text = str(exc)
    errors = re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit)\b.*)$", text, re.MULTILINE)
    python = [e for e in errors if not e.startswith(("org.", "java.", "py4j.", "scala."))]
    if python:
        return str(python[-1]).strip()
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


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
