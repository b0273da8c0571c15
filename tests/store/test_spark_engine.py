"""Apache Spark in local mode: tasks write the local engine's bank file for file, a retried
or failing task leaves nothing behind, the driver receives no table data, PEC built from
several shards, and the views answering on Spark SQL as on DuckDB."""

from __future__ import annotations

import os
import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from convbank.build import build
from convbank.datasets.pec.synthetic import write_pec
from convbank.engines.local import LocalEngine
from convbank.errors import BuildError
from convbank.fetch import Fetcher
from convbank.query import load, sql
from convbank.store import Bank
from testsupport import SHARED

# one worker starts the module's Spark session (a JVM, about 15 s) for all its tests (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("spark")

TABLES = ("conversations", "participants", "turns", "annotations")
MASTER = "local[2,2]"
"""Two cores, a failed task tried twice (``spark.task.maxFailures`` is this in local mode)."""


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("Java is missing: .ci/run installs Debian's openjdk-17-jre-headless")
        pytest.skip("no Java on this machine (apt-get install openjdk-17-jre-headless)")
    from convbank.engines.spark import session

    yield session(MASTER)


def _tables(bank: Bank, dataset: str) -> dict[str, pa.Table]:
    """Each partition's rows, its pieces (files named by their content) in the manifest's order."""
    out = {}
    with bank.snapshot() as snap:
        for table in (*TABLES, f"{dataset}_raw"):
            for ref in snap.refs(table):
                key = str(ref.path.parent.relative_to(bank.root))
                out[key] = pa.concat_tables([*([out[key]] if key in out else []), pq.read_table(ref.path)])
    return out


def _content(bank: Bank, dataset: str) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Every file of the bank but its manifest and generation records, by path, and the
    dataset's manifest entries (counts, files with their sizes, sha256 and footers)."""
    files = {
        str(p.relative_to(bank.root)): p.read_bytes()
        for p in sorted(bank.root.rglob("*"))
        if p.is_file() and p.name not in ("manifest.json", ".lock") and ".generations" not in p.parts
    }
    return files, msgspec.to_builtins(bank.built()[dataset].configs)


def _build(
    tmp: Path,
    name: str,
    sources: Path,
    engine: object = None,
    batch_size: int = 2000,
    bank: Bank | None = None,
) -> Bank:
    bank = bank or Bank(tmp / "bank")
    fetcher = Fetcher(sources=[sources], verify=False, root=tmp / "home", progress=False)
    config = "happy" if name == "pec" else None
    report = build([name], config=config, fetcher=fetcher, bank=bank, engine=engine, batch_size=batch_size)
    assert report.ok, report.failures
    return bank


def _answers(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What the tasks of the next Spark builds send back to the driver, as it receives it."""
    from convbank.engines import spark as spark_engine

    answers: list[dict[str, Any]] = []
    adopt = spark_engine.SparkEngine._adopt

    def spy(self: Any, got: list[dict[str, Any]], *args: Any) -> Iterator[Any]:
        answers.extend(got)
        return adopt(self, got, *args)

    monkeypatch.setattr(spark_engine.SparkEngine, "_adopt", spy)
    return answers


def test_casino_by_spark_equals_local_to_the_byte(spark: object, tmp_path: Path) -> None:
    from convbank.engines.spark import SparkEngine

    local = _build(tmp_path / "local", "casino", SHARED / "casino", LocalEngine(2))
    distributed = _build(tmp_path / "spark", "casino", SHARED / "casino", SparkEngine(MASTER))
    files, entries = _content(local, "casino")
    assert _content(distributed, "casino") == (files, entries)
    assert len([f for f in files if f.endswith(".parquet")]) == 15 and len(files) == 18  # and 3 record files
    assert entries["default"]["splits"]["train"]["conversations"] == 900
    assert not (distributed.root / ".staging").exists()


def test_pec_pieces_written_by_tasks_equal_local_and_no_table_data_reaches_the_driver(
    spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PEC cut in the local engine's pieces (made small here: 40 KB): every piece's files,
    names, bytes and manifest entries as the local engine's workers write them; what the
    tasks send back is facts (no id, no text), 8 bytes a conversation for the id check."""
    from convbank.engines import spark as spark_engine

    monkeypatch.setattr("convbank.engines.local.PIECE_BYTES", 40_000)
    write_pec(tmp_path / "src", 1500, seed=3)
    local = _build(tmp_path / "local", "pec", tmp_path / "src", LocalEngine(2), batch_size=200)
    answers = _answers(monkeypatch)
    distributed = _build(tmp_path / "spark", "pec", tmp_path / "src", spark_engine.SparkEngine(MASTER), 200)
    files, entries = _content(local, "pec")
    assert _content(distributed, "pec") == (files, entries)
    train = entries["happy"]["files"]["turns"]["train"]
    assert isinstance(train, list) and len(train) > 3  # several pieces
    assert len(answers) == sum(
        len(v) if isinstance(v, list) else 1 for v in entries["happy"]["records"].values()
    )
    assert {k for a in answers for k in a} == {"attempt", "number", "split", "rows", "facts", "hashes"}
    sent = pickle.dumps(answers)
    conversations = sum(s["conversations"] for s in entries["happy"]["splits"].values())
    assert len(sent) < 8 * conversations + 3000 * len(answers)  # hashes and facts, not tables
    corpus = load("pec", "happy", bank=distributed)
    some = corpus["happy-train-001234"]
    assert some.conversation_id.encode() not in sent and some.turns[-1].text.encode() not in sent
    assert some == load("pec", "happy", bank=local)["happy-train-001234"]


def test_a_killed_and_retried_task_leaves_exactly_the_local_bank(
    spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first attempt of one task dies once its files are written (its Python worker
    exits); Spark runs it again; the bank is the local engine's, with no file more."""
    from convbank.engines.spark import SparkEngine

    def die_first(partition: int, attempt: int) -> None:
        if partition == 1 and attempt == 0:
            os._exit(3)

    local = _build(tmp_path / "local", "casino", SHARED / "casino", LocalEngine(2))
    answers = _answers(monkeypatch)
    engine = SparkEngine(MASTER, fault=die_first)
    distributed = _build(tmp_path / "spark", "casino", SHARED / "casino", engine)
    attempts = sorted(a["attempt"] for a in answers)  # s<stage>-p<partition>-a<attempt>-t<id>
    assert [a.split("-")[1:3] for a in attempts] == [["p0", "a0"], ["p1", "a1"], ["p2", "a0"]]
    assert _content(distributed, "casino") == _content(local, "casino")
    assert not (distributed.root / ".staging").exists()


def test_a_task_failing_every_attempt_leaves_the_previous_bank(spark: object, tmp_path: Path) -> None:
    from convbank.engines.spark import SparkEngine

    def fail(partition: int, attempt: int) -> None:
        if partition == 2:
            raise RuntimeError(f"attempt {attempt} fails")

    bank = _build(tmp_path, "casino", SHARED / "casino", LocalEngine(2))
    before, manifest = _content(bank, "casino"), bank.manifest_path.read_bytes()
    with pytest.raises(
        BuildError, match=r"casino/default failed \(RuntimeError: attempt 1 fails;.*previous bank"
    ):
        _build(tmp_path, "casino", SHARED / "casino", SparkEngine(MASTER, fault=fail), bank=bank)
    assert bank.manifest_path.read_bytes() == manifest and _content(bank, "casino") == before
    assert not (bank.root / ".staging").exists()


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_a_repeated_id_is_named_as_by_the_local_engine(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two records of one batch sharing an id: the local engine names both records, and the
    Spark driver, from the tasks' 8-byte id hashes, the same (before: the record writer's
    internal NotGroupedError, a traceback in either engine)."""
    import json

    from convbank.engines.spark import SparkEngine
    from convbank.errors import FormatError

    src = tmp_path / "casino"
    shutil.copytree(SHARED / "casino", src)
    valid = json.loads((src / "casino_valid.json").read_text(encoding="utf-8"))
    valid[25]["dialogue_id"] = valid[3]["dialogue_id"]
    (src / "casino_valid.json").write_text(json.dumps(valid), encoding="utf-8")
    if engine == "spark":
        request.getfixturevalue("spark")  # the session (skips without Java)
    with pytest.raises(
        FormatError, match=r"casino/default/valid\): record 25 repeats conversation id .*record 3 of"
    ):
        _build(tmp_path, "casino", src, SparkEngine(MASTER) if engine == "spark" else None)
    assert not (tmp_path / "bank" / ".staging").exists()


def test_pec_in_shards(spark: object, tmp_path: Path) -> None:
    from convbank.engines.spark import SparkEngine

    write_pec(tmp_path / "src", 3000, seed=5)
    local = _build(tmp_path / "local", "pec", tmp_path / "src", batch_size=500)
    engine = SparkEngine(MASTER, shards_per_file=4)
    distributed = _build(tmp_path / "spark", "pec", tmp_path / "src", engine, batch_size=500)
    assert _tables(local, "pec").keys() == _tables(distributed, "pec").keys()
    for name, table in _tables(local, "pec").items():
        other = _tables(distributed, "pec")[name]
        assert table.equals(other), name  # four pieces a split, the same rows in order
    with distributed.snapshot() as snap:
        train = snap.refs("conversations")
    assert len(train) == 12  # four pieces a split
    corpus = load("pec", "happy", bank=distributed)
    assert len(corpus) == 3600
    conv = corpus["happy-train-002999"]
    assert conv == load("pec", "happy", bank=local)["happy-train-002999"]


QUERIES = (
    "SELECT dataset, config, split, count(*) AS n FROM conversations GROUP BY dataset, config, split ORDER BY dataset, config, split",
    "SELECT label, count(*) AS n FROM annotations WHERE dataset = 'casino' GROUP BY label ORDER BY n DESC, label",
    "SELECT t.participant_id, count(*) AS n FROM turns t JOIN conversations c ON t.dataset = c.dataset AND t.config = c.config AND t.split = c.split AND t.conversation_id = c.conversation_id WHERE c.num_turns > 20 GROUP BY t.participant_id ORDER BY n DESC, t.participant_id",
    "SELECT split, sum(num_turns) AS turns, max(num_turns) AS longest FROM conversations WHERE dataset = 'convai2' GROUP BY split ORDER BY split",
)


@pytest.mark.parametrize("query", QUERIES)
def test_views_answer_as_on_duckdb(spark: object, built: Bank, query: str) -> None:
    from convbank.engines.spark import sql as spark_sql

    expected = sql(query, bank=built).to_pylist()
    got = spark_sql(query, bank=built, master="local[2]").to_pylist()
    assert got == expected and expected


def test_spark_reads_the_bank_directly(spark: object, built: Bank) -> None:
    """The README's snippet: the bank is a Hive-partitioned Parquet dataset."""
    turns = spark.read.option("basePath", str(built.root / "turns")).parquet(str(built.root / "turns"))  # type: ignore[attr-defined]
    assert turns.filter("dataset = 'casino'").count() == 14297
    assert set(turns.columns) >= {
        "dataset",
        "config",
        "split",
        "conversation_id",
        "turn_index",
        "text",
        "meta",
    }
    (path,) = (built.root / "turns/dataset=casino/config=default/split=train").glob("part-*.parquet")
    meta = pq.read_schema(path).metadata
    assert meta[b"convbank.schema_version"] == b"1.0" and meta[b"convbank.table"] == b"turns"
