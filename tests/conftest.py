"""Shared fixtures: an isolated CONVBANK_HOME per test, offline always, source folders with the
real CaSiNo/ConvAI2 files (../shared/data) and the hand-written fixtures, and one bank built
from all of them for the tests that only read.

``tests/plugins`` is put on ``sys.path`` first: it holds the package of a sixth dataset,
``convbank_tsvdial``, and its ``*.dist-info`` with the ``convbank.datasets`` entry point, so
the catalog finds it as it finds any installed plugin, and every catalog-wide test runs on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

if os.environ.get("PYTEST_XDIST_WORKER"):
    # A worker of pytest-xdist (the README's `pytest -n 2`) starts with COLUMNS=80 and LINES=24
    # set, which a plain run has not: convbank's tables would fit 80 columns instead of printing
    # whole, so they go, before the CLI reads them at import.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    # Each worker's math libraries (PyTorch, BLAS) on one thread, in the worker and the processes
    # it starts: two workers with a thread per core each ran the fine-tuning test 15 times
    # slower (300 s, its limit; 20 s alone).
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, "1")

PLUGINS = Path(__file__).resolve().parent / "plugins"
"""A sys.path entry holding plugin packages and their metadata (entry points)."""
if str(PLUGINS) not in sys.path:
    sys.path.insert(0, str(PLUGINS))

import pytest  # noqa: E402

from convbank import catalog  # noqa: E402
from convbank.build import build  # noqa: E402
from convbank.fetch import Fetcher  # noqa: E402
from convbank.store import Bank  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

FIXTURE_COUNTS = {
    ("ccpe", "default"): {"train": 3},
    ("curiosity", "default"): {"train": 3, "val": 1, "test": 1, "test_zero": 1},
    ("pec", "happy"): {"train": 3, "valid": 1, "test": 1},
    ("pec", "offmychest"): {"train": 2, "valid": 1, "test": 1},
}
REAL_COUNTS = {
    ("casino", "default"): {"train": 900, "valid": 30, "test": 100},
    ("convai2", "volunteers"): {"train": 1111},
    ("convai2", "intermediate"): {"train": 291},
    ("tsvdial", "default"): {"train": 3, "test": 2},  # the plugin's own samples, complete
}
ALL_COUNTS = {**REAL_COUNTS, **FIXTURE_COUNTS}


@pytest.fixture(autouse=True)
def _alone_under_xdist(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``alone`` (its queries have time limits, its load
    test counts requests a second) runs while no other worker runs a test: it takes a lock
    file shared by the workers exclusively, every other test takes it shared."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import fcntl

    lock = tmp_path_factory.getbasetemp().parent / "alone.lock"
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX if request.node.get_closest_marker("alone") else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CONVBANK_OFFLINE", "1")
    monkeypatch.delenv("CONVBANK_SOURCE", raising=False)


def make_fixture_sources(target: Path) -> Path:
    """A source folder with the hand-written fixtures (PEC extracted; Curiosity's fact
    database generated from facts.sql)."""
    for name in ("ccpe", "curiosity", "pec"):
        shutil.copytree(FIXTURES / name, target / name, dirs_exist_ok=True)
    sql = (target / "curiosity" / "facts.sql").read_text(encoding="utf-8")
    with sqlite3.connect(target / "curiosity" / "wiki_sql.sqlite.db") as db:
        db.executescript(sql)
    (target / "curiosity" / "facts.sql").unlink()
    return target


@pytest.fixture(scope="session")
def fixture_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only folder of the hand-written fixtures."""
    return make_fixture_sources(tmp_path_factory.mktemp("fixture-sources"))


def sample_dirs() -> list[Path]:
    """The sample folders that dataset packages ship (:attr:`Dataset.samples`)."""
    return [ds.samples for ds in catalog.catalog if ds.samples is not None]


@pytest.fixture(scope="session")
def all_sources(fixture_sources: Path) -> list[Path]:
    """Source folders for every dataset: the shared real files, the fixtures and the samples
    dataset packages ship."""
    return [SHARED, fixture_sources, *sample_dirs()]


@pytest.fixture(scope="session")
def built_home(tmp_path_factory: pytest.TempPathFactory, all_sources: list[Path]) -> Path:
    """A CONVBANK_HOME whose bank holds everything the sources allow (read-only use)."""
    home = tmp_path_factory.mktemp("built-home")
    mp = pytest.MonkeyPatch()
    mp.setenv("CONVBANK_OFFLINE", "1")
    mp.setenv("CONVBANK_HOME", str(home))
    try:
        fetcher = Fetcher(sources=all_sources, verify=False, root=home, progress=False)
        report = build(fetcher=fetcher, bank=Bank(home / "bank"))
    finally:
        mp.undo()
    built = {(s.dataset, s.config) for s in report.splits}
    assert built == set(ALL_COUNTS), report.failures
    return home


@pytest.fixture
def built(built_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bank]:
    """Point CONVBANK_HOME at the shared built bank and return it."""
    monkeypatch.setenv("CONVBANK_HOME", str(built_home))
    yield Bank(built_home / "bank")


@pytest.fixture(scope="session")
def docs_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CONVBANK_HOME with CaSiNo and ConvAI2's volunteers and intermediate rounds, built
    once from the real files; each page gets a copy."""
    from convbank.build import build
    from convbank.fetch import Fetcher
    from convbank.store import Bank

    home = tmp_path_factory.mktemp("docs-home")
    fetcher = Fetcher(sources=[SHARED], verify=False, offline=True, root=home, progress=False)
    bank = Bank(home / "bank")
    assert build(["casino"], fetcher=fetcher, bank=bank).ok
    for config in ("volunteers", "intermediate"):
        assert build(["convai2"], config=config, fetcher=fetcher, bank=bank).ok
    return home


@pytest.fixture
def casino_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bank:
    """A bank of its own holding the real CaSiNo (``CONVBANK_HOME`` points at it), for tests
    that damage, lock or rebuild it."""
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path))
    bank = Bank(tmp_path / "bank")
    build(["casino"], fetcher=Fetcher(sources=[SHARED], verify=False, progress=False), bank=bank)
    return bank


def turns_file(bank: Bank, split: str) -> Path:
    """The stored ``turns`` file of CaSiNo's ``split``."""
    with bank.snapshot() as snap:
        return snap.ref("turns", "casino", "default", split).path


def bank_files(bank: Bank) -> dict[str, str]:
    """Every file of a bank (lock files aside) with its sha256: equal before and after an
    operation means the operation changed nothing on disk."""
    return {
        str(p.relative_to(bank.root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(bank.root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def blocked_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A CONVBANK_HOME below a regular file: nothing can be created in it, even as root."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    home = blocker / "home"
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    return home, blocker


@contextmanager
def mounted_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A small tmpfs of ``size`` (``4m``) mounted at ``where`` for full-disk tests (needs mount
    rights: root in CI); the test is skipped where it cannot be mounted."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def casino_home_with(root: Path, text: str, label: str) -> Path:
    """A CONVBANK_HOME whose bank holds the real CaSiNo with one utterance replaced: the first
    annotated turn of the first annotated train dialogue says ``text`` and is labelled
    ``label`` (hostile or awkward content, through the real reader and mapper). The dialogue's
    id is written to ``<home>/dialogue``."""
    source = root / "source" / "casino"
    shutil.copytree(SHARED / "casino", source)
    records = json.loads((source / "casino_train.json").read_text(encoding="utf-8"))
    record = next(r for r in records if r["annotations"])
    first = record["annotations"][0][0]
    for turn in record["chat_logs"]:
        if turn["text"] == first:
            turn["text"] = text
    record["annotations"][0] = [text, label]
    (source / "casino_train.json").write_text(json.dumps(records), encoding="utf-8")
    home = root / "home"
    mp = pytest.MonkeyPatch()
    mp.setenv("CONVBANK_HOME", str(home))
    try:
        fetcher = Fetcher(sources=[source.parent], verify=False, root=home, progress=False)
        build(["casino"], fetcher=fetcher, bank=Bank(home / "bank"))
    finally:
        mp.undo()
    (home / "dialogue").write_text(str(record["dialogue_id"]), encoding="utf-8")
    return home
