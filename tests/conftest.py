"""Shared fixtures: an isolated CONVBANK_HOME per test, offline always, source folders with the
real CaSiNo/ConvAI2 files (../shared/data) and the hand-written fixtures, and one bank built
from all of them for the tests that only read."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from convbank.build import build
from convbank.fetch import Fetcher
from convbank.store import Bank

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
}
ALL_COUNTS = {**REAL_COUNTS, **FIXTURE_COUNTS}


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


@pytest.fixture(scope="session")
def all_sources(fixture_sources: Path) -> list[Path]:
    """Source folders for every dataset: the shared real files and the fixtures."""
    return [SHARED, fixture_sources]


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
