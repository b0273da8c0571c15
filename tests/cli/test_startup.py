"""Start-up: the commands that only print (``--version``, ``--help``, ``where``) import no
pyarrow, DuckDB, pandas or rich; ``list`` and ``info`` import no DuckDB or pandas. Checked by
the modules a fresh interpreter holds, not by a timer (the timings are the benchmark
harness's: ``python -m benchmarks --only startup``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convbank.store import Bank
from testsupport import probe as run_probe

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("pyarrow", "duckdb", "pandas", "numpy", "rich", "msgspec")

_PROBE = """
import contextlib, io, json, sys
from convbank.cli.main import cli
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        cli(sys.argv[1:], prog_name="convbank")
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _modules(*args: str, home: Path) -> tuple[int, set[str]]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return int(result["code"] or 0), set(result["modules"])


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["where"], ["query", "--help"]])
def test_printing_commands_import_nothing_heavy(args: list[str], tmp_path: Path) -> None:
    code, modules = _modules(*args, home=tmp_path)
    assert code == 0
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))


def test_export_help_lists_the_formats_without_arrow(tmp_path: Path) -> None:
    """``export --help`` reads every format's declaration (the registry), none of their writers'
    libraries: no pyarrow, DuckDB, pandas or NumPy (``datasets``, ``mlcroissant`` neither)."""
    code, modules = _modules("export", "--help", home=tmp_path)
    assert code == 0
    heavy = {"pyarrow", "numpy", "duckdb", "pandas", "datasets", "mlcroissant"}
    assert modules.isdisjoint(heavy), sorted(modules & heavy)


@pytest.mark.parametrize("args", [["list"], ["info", "casino"]])
def test_catalog_commands_import_no_arrow_duckdb_or_pandas(args: list[str], tmp_path: Path) -> None:
    """The catalog's Arrow schemas are made when first used (``convbank._lazy``), so listing
    the datasets and showing a card import neither pyarrow nor NumPy; nor what only builds,
    fetches and hashes need (file locks, OpenSSL's hashes, logging, platformdirs where
    ``CONVBANK_HOME`` is set): together about a third of ``list``'s start-up."""
    code, modules = _modules(*args, home=tmp_path)
    assert code == 0
    heavy = {"pyarrow", "numpy", "duckdb", "pandas", "filelock", "hashlib", "logging", "platformdirs"}
    assert modules.isdisjoint(heavy), sorted(modules & heavy)


def test_import_convbank_is_light_and_its_names_still_resolve() -> None:
    probe = (
        "import sys, convbank; light = 'pyarrow' not in sys.modules and 'duckdb' not in sys.modules; "
        "from convbank import load, sql, Corpus, catalog, build, Fetcher; "
        "import convbank.export as e; from convbank.export import export, to_hf; "
        "print(light, callable(load), e.FORMATS[0], convbank.catalog.get('casino').name)"
    )
    printed = run_probe(probe)
    assert printed == ["True", "True", "source", "casino"]


def test_opening_a_corpus_and_getting_a_conversation_imports_neither_duckdb_nor_parquet(
    casino_home: Bank,
) -> None:
    """``load(name)[id]`` reads the manifest and one record file, whose index holds the ids
    and the footers it was made from: DuckDB (45 ms of imports, measured here) is for SQL,
    scans and typed tables, and ``pyarrow.parquet`` (10-16 ms with the file systems it
    imports) for the tables; each loads with the first reader that needs it."""
    probe = (
        "import sys, convbank; from convbank.store import Bank; "
        f"c = convbank.load('casino', bank=Bank({str(casino_home.root)!r})); "
        "print(c['938'].conversation_id, len(c), c[5].conversation_id == c.conversation_ids()[5]); "
        "print('duckdb' in sys.modules, 'pyarrow.parquet' in sys.modules); "
        "c.to_arrow('conversations', meta='struct'); "
        "print('duckdb' in sys.modules, 'pyarrow.parquet' in sys.modules)"
    )
    printed = run_probe(probe)
    assert printed == ["938", "1030", "True", "False", "False", "True", "True"]
