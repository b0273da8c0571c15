"""What the tests share besides fixtures: where the real data, the fixtures and the plugins are,
the counts they hold, and helpers that make or inspect banks (``from testsupport import SHARED``:
``tests/_support`` is on ``sys.path`` through pytest's ``pythonpath`` setting in pyproject.toml).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

import convbank
from convbank import catalog
from convbank.build import build
from convbank.fetch import Fetcher
from convbank.store import Bank

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared" / "data"
FIXTURES = TESTS / "fixtures"
PLUGINS = TESTS / "plugins"
"""A sys.path entry holding plugin packages and their metadata (entry points)."""

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


def probe(code: str) -> list[str]:
    """What a fresh Python process running ``code`` (convbank from this checkout's ``src``)
    prints, split on whitespace: for what a process imports or does first, which a test's
    own process has done long before."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return done.stdout.split()


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


def sample_dirs() -> list[Path]:
    """The sample folders that dataset packages ship (:attr:`Dataset.samples`)."""
    return [ds.samples for ds in catalog.catalog if ds.samples is not None]


def turns_file(bank: Bank, split: str) -> Path:
    """The stored ``turns`` file of CaSiNo's ``split``."""
    with bank.snapshot() as snap:
        return snap.ref("turns", "casino", "default", split).path


def record_entry(bank: Bank, dataset: str, config: str, split: str, conversation_id: str) -> tuple[Path, int]:
    """The record file holding a conversation (:mod:`convbank.store.records`) and the offset
    of that conversation's entry in it: where a flipped byte damages that one answer."""
    from convbank.query import load
    from convbank.store.records import read_index

    corpus = load(dataset, config, split, bank=bank)
    try:
        batch, row = corpus._source.locate(corpus._position_of(conversation_id))
        first = corpus._source.batches[batch]
        (ref,) = [
            r for r in corpus.snapshot.record_pieces(dataset, config, split) if r.piece == first.ref.piece
        ]
    finally:
        corpus.close()
    with ref.path.open("rb") as f:
        index, _ = read_index(f)
    return ref.path, index.offsets[first.first + row]


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


def imported_chats(folder: Path, count: int) -> convbank.Corpus:
    """A corpus imported as ``chats`` from ``count`` one-message chats, ``c0`` ... (``q0`` ...)."""
    path = folder / "chats.jsonl"
    rows = ({"id": f"c{i}", "messages": [{"role": "user", "content": f"q{i}"}]} for i in range(count))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    return convbank.load("chats")


def convbank_with_plugins(
    home: Path, *args: str, path: Sequence[Path] = (PLUGINS,)
) -> subprocess.CompletedProcess[str]:
    """``python -m convbank ARGS`` in a fresh process whose only tie to the plugins is its
    PYTHONPATH (this checkout's sources, then ``path``: by default the folder holding the
    test plugins)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *map(str, path)]),
        "CONVBANK_HOME": str(home),
        "CONVBANK_OFFLINE": "1",
        "COLUMNS": "200",
    }
    env.pop("CONVBANK_SOURCE", None)
    return subprocess.run(
        [sys.executable, "-m", "convbank", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=home.parent,
    )


def plugin(site: Path, name: str, entry_points: str, **modules: str) -> Path:
    """A plugin package installed on the ``sys.path`` entry ``site`` (made if missing): each
    module of ``modules`` (``faulty="class Faulty..."`` is ``faulty.py``) and the package's
    metadata (:func:`dist_info`) declaring ``entry_points``; ``site`` back, to hand to
    :func:`convbank_with_plugins` as ``path=(PLUGINS, site)``. Example:
    ``plugin(tmp_path, "odd", "[convbank.datasets]\\nodd = odd:Odd\\n", odd=SOURCE)``."""
    site.mkdir(parents=True, exist_ok=True)
    for module, text in modules.items():
        (site / f"{module}.py").write_text(text, encoding="utf-8")
    return dist_info(site, name, entry_points)


def dist_info(root: Path, name: str, entry_points: str) -> Path:
    """A package's metadata on a ``sys.path`` entry ``root``, as importlib.metadata reads it
    (``NAME-1.0.dist-info``: its name, version and ``entry_points.txt``); ``root`` back.
    Example: ``dist_info(tmp_path, "odd", "[convbank.datasets]\\nodd = odd:Odd\\n")``."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return root


def convbank_process(*args: str, stdout: int | None = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """``python -m convbank ARGS`` started in its own session (a signal sent to it reaches it
    alone, as a terminal's Ctrl-C reaches the command), its stderr piped. Example:
    ``convbank_process("query", "SELECT 1").communicate(timeout=60)``."""
    return subprocess.Popen(
        [sys.executable, "-m", "convbank", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def descendants(pid: int) -> list[int]:
    """The descendants of a process, children first. Example: ``descendants(os.getpid())``."""
    found = subprocess.run(
        ["pgrep", "-P", str(pid)], check=False, capture_output=True, text=True
    ).stdout.split()
    kids = [int(k) for k in found]
    return kids + [g for k in kids for g in descendants(k)]
