"""Apache Spark in local mode: the same bank as the local engine, PEC built from several
shards, and the views answering on Spark SQL as on DuckDB."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from convbank.build import build
from convbank.datasets.pec.synthetic import write_pec
from convbank.fetch import Fetcher
from convbank.query import load, sql
from convbank.store import Bank
from testsupport import SHARED

# one worker starts the module's Spark session (a JVM, about 15 s) for all its tests (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("spark")

TABLES = ("conversations", "participants", "turns", "annotations")


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("Java is missing: .ci/run installs Debian's openjdk-17-jre-headless")
        pytest.skip("no Java on this machine (apt-get install openjdk-17-jre-headless)")
    from convbank.engines.spark import session

    yield session("local[2]")


def _files(bank: Bank, dataset: str) -> dict[str, pa.Table]:
    out = {}
    for table in (*TABLES, f"{dataset}_raw"):
        for path in sorted((bank.root / table).rglob("*.parquet")):
            out[str(path.parent.relative_to(bank.root))] = pq.read_table(
                path
            )  # file names are content hashes
    return out


def _build(tmp: Path, name: str, sources: Path, engine: object = None, batch_size: int = 2000) -> Bank:
    bank = Bank(tmp / "bank")
    fetcher = Fetcher(sources=[sources], verify=False, root=tmp / "home", progress=False)
    config = "happy" if name == "pec" else None
    report = build([name], config=config, fetcher=fetcher, bank=bank, engine=engine, batch_size=batch_size)
    assert report.ok, report.failures
    return bank


def test_casino_by_spark_equals_local(spark: object, tmp_path: Path) -> None:
    from convbank.engines.spark import SparkEngine

    local = _build(tmp_path / "local", "casino", SHARED / "casino")
    distributed = _build(tmp_path / "spark", "casino", SHARED / "casino", SparkEngine("local[2]"))
    a, b = _files(local, "casino"), _files(distributed, "casino")
    assert list(a) == list(b) and len(a) == 15
    for name in a:
        assert a[name].equals(b[name]), name
        assert a[name].schema.equals(b[name].schema, check_metadata=True)
    assert distributed.built()["casino"].configs["default"].splits["train"].conversations == 900


def test_pec_in_shards(spark: object, tmp_path: Path) -> None:
    from convbank.engines.spark import SparkEngine

    write_pec(tmp_path / "src", 3000, seed=5)
    local = _build(tmp_path / "local", "pec", tmp_path / "src", batch_size=500)
    engine = SparkEngine("local[2]", shards_per_file=4)
    distributed = _build(tmp_path / "spark", "pec", tmp_path / "src", engine, batch_size=500)
    for name, table in _files(local, "pec").items():
        other = _files(distributed, "pec")[name]
        keys = [("conversation_id", "ascending")] + (
            [("turn_index", "ascending")] if "turn_index" in table.column_names else []
        )
        if name.startswith("participants"):
            keys.append(("participant_id", "ascending"))
        assert table.sort_by(keys).equals(other.sort_by(keys)), name
    with distributed.snapshot() as snap:
        train = snap.ref("conversations", "pec", "happy", "train").path
    assert pq.ParquetFile(train).num_row_groups > 6  # shards of 750 in batches of 500
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
