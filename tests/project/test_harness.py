"""The performance harness runs (``python -m benchmarks --quick``) and writes its results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.contenders import CONTENDERS  # noqa: E402
from benchmarks.examples import EXAMPLES  # noqa: E402
from benchmarks.training import TRAINING  # noqa: E402


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks --quick ARGS``, its exit status checked."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=580,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.timeout(600)  # the harness's own limit below; a loaded machine needs more than 300 s
@pytest.mark.slow
def test_quick_harness_runs(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    # every contender and the start-up table, on CaSiNo alone (the full and quick runs add
    # ConvAI2 and the synthetic PEC: minutes more for the same code paths)
    # and the import rows at 10,000 turns (the quick run: 100,000; the full run adds 1,000,000);
    # no Spark rows: their JVM and two builds cost a minute of the suite's 15 (measured here:
    # 2 min 31 s with them, 1 min 24 s without), and tests/store/test_spark_engine.py builds
    # the same PEC by both engines and compares them file by file
    done = _harness(
        "--datasets", "casino", "--import-turns", "10000", "--spark-sizes", "0", "--out", str(out)
    )
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results.pop("measured").endswith(" UTC")
    startup = results.pop("startup")
    imports = results.pop("imports")
    assert set(imports) == {"chat-10000"}
    assert set(imports["chat-10000"]) == {"convbank_import", "hf_import", "convokit_import"}
    assert "### import a chat JSONL" in done.stdout and "| 10,000 | " in done.stdout
    assert "spark" not in results and "### PEC built by Spark" not in done.stdout  # --spark-sizes 0
    assert set(results) == {"casino"}
    assert set(startup["convbank"]) == {
        "convbank --version",
        "convbank --help",
        "convbank where",
        "convbank list",
        "convbank info casino",
    }
    assert {"duckdb --version (pip launcher)", "sqlite-utils --version"} <= set(startup["peers"])
    assert "### start-up" in done.stdout and "| convbank list | " in done.stdout
    assert "÷ duckdb --version (pip launcher)" in done.stdout and "÷ sqlite-utils --version" in done.stdout
    for dataset, contenders in results.items():
        # beside the contenders, the bank on disk and its record files' share (the random-access rows)
        size = contenders.pop("bank_size")
        assert size["mib"] > size["records_mib"] > 0, dataset
        assert set(contenders) == set(CONTENDERS) | set(TRAINING) | set(EXAMPLES), dataset
        for r in contenders.values():
            assert 0 < r["min_s"] <= r["median_s"] and r["peak_rss_mib"] > 0
        assert f"### {dataset}" in done.stdout
        assert f"Goals, {dataset} (medians of this run):" in done.stdout
        without = size["mib"] - size["records_mib"]
        disk = f"| bank on disk (MiB; peer: without its record files) | {size['mib']:,.1f} | {without:,.1f} |"
        assert disk in done.stdout
    for row in (
        "1,000 random `corpus[i]`, cold (ms)",
        "1,000 random `corpus[i]`, warm (ms)",
        "peak memory of those runs (MiB)",
        "open a corpus and get one conversation (ms)",
        "polars scan, filtered, first collect (ms; peer: scan_parquet)",
        "build (ms)",
        "build over the floor (ms; peer: the floor)",
    ):
        assert f"| {row} | " in done.stdout, row
    assert "| convbank_build | " in done.stdout and "× floor" in done.stdout
    assert "| work | convbank s | Hugging Face s | ConvoKit s |" in done.stdout
    for work in (
        "build",
        "iterate",
        "turns_pandas",
        "filter",
        "take",
        "getitem_warm",
        "loader_2",
        "scan",
        "mix_epoch",
        "tokenize_collate",
        "map_cached",
    ):
        assert f"| {work} | " in done.stdout


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_the_storage_goals_run_alone(tmp_path: Path) -> None:
    """``--storage-only`` (what CI runs, with ``--quick``): the goals table's contenders and
    nothing else, each row printed with its goal and whether this run met it."""
    from benchmarks.__main__ import STORAGE

    out = tmp_path / "storage.json"
    done = _harness("--storage-only", "--datasets", "casino", "--out", str(out))
    results = json.loads(out.read_text(encoding="utf-8"))
    assert set(results) == {"measured", "casino"}
    assert set(results["casino"]) == {*STORAGE, "bank_size"}
    rows = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("| ") and line.endswith(("| yes |", "| **no** |"))
    ]
    assert len(rows) == 8, done.stdout
    assert "### start-up" not in done.stdout and "import a chat JSONL" not in done.stdout
