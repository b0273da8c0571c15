"""Shared fixtures: an isolated CONVBANK_HOME per test, offline always, source folders with the
real CaSiNo/ConvAI2 files (../shared/data) and the hand-written fixtures, and one bank built
from all of them for the tests that only read.

``tests/plugins`` is put on ``sys.path`` first: it holds the package of a sixth dataset,
``convbank_tsvdial``, and its ``*.dist-info`` with the ``convbank.datasets`` entry point, so
the catalog finds it as it finds any installed plugin, and every catalog-wide test runs on it.
Constants and helpers that are not fixtures are in ``tests/_support/testsupport.py``; each
component's folder (``tests/store``, ``tests/web``...) has its own tests and, where they share
fixtures, its ``conftest.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

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
if str(PLUGINS) not in sys.path:
    sys.path.insert(0, str(PLUGINS))

import pytest  # noqa: E402

from convbank.build import build  # noqa: E402
from convbank.fetch import Fetcher  # noqa: E402
from convbank.store import Bank  # noqa: E402
from testsupport import ALL_COUNTS, SHARED, make_fixture_sources, sample_dirs  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` (a minute or more each on a loaded machine) first, the rest in
    their order: pytest-xdist hands tests out in this order, and a long one handed out last
    keeps one worker busy while the other has nothing left to run."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


class _AloneLock:
    """Under pytest-xdist, a test marked ``alone`` (its queries have time limits, its load test
    counts requests a second) runs while no other worker runs a test: it takes a lock file
    shared by the workers exclusively, every other test takes it shared. A worker keeps the
    exclusive lock from one ``alone`` test to the next it runs (they are one xdist group), so
    it waits for the other worker's current test once, not before each of them (about 30
    waits of up to a whole test each, 200 s of an idle worker in a run, before)."""

    def __init__(self) -> None:
        self.file: IO[bytes] | None = None
        self.mode = 0

    def take(self, mode: int) -> None:
        import fcntl

        if self.mode == mode:
            return
        if self.file is None:
            name = f"convbank-alone-{os.environ.get('PYTEST_XDIST_TESTRUNUID', 'run')}.lock"
            self.file = (Path(tempfile.gettempdir()) / name).open("ab")
        self.release()
        fcntl.flock(self.file, mode)
        self.mode = mode

    def release(self) -> None:
        import fcntl

        if self.file is not None and self.mode:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.mode = 0


_ALONE = _AloneLock()


def _lock_mode(item: pytest.Item | None) -> int:
    import fcntl

    if item is None:
        return 0
    return fcntl.LOCK_EX if item.get_closest_marker("alone") else fcntl.LOCK_SH


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Each test under its lock (:class:`_AloneLock`), an exclusive one kept for the next test
    when that one is ``alone`` too; a shared one given up after each test, so that a waiting
    ``alone`` test goes next."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import fcntl

    _ALONE.take(_lock_mode(item))
    try:
        yield
    finally:
        if _ALONE.mode == fcntl.LOCK_SH or _lock_mode(nextitem) != fcntl.LOCK_EX:
            _ALONE.release()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CONVBANK_OFFLINE", "1")
    monkeypatch.delenv("CONVBANK_SOURCE", raising=False)


@pytest.fixture(scope="session")
def fixture_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Read-only folder of the hand-written fixtures."""
    return make_fixture_sources(tmp_path_factory.mktemp("fixture-sources"))


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
