"""A build on every core: a splittable split (PEC's text files) is cut in pieces that worker
processes map and write into the staging folder themselves; the bank reads the same as a
build in one process, conversation for conversation, and every reader works across pieces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convbank import load, sql
from convbank.build import build
from convbank.datasets.pec.synthetic import write_pec
from convbank.engines import local
from convbank.engines.local import LocalEngine
from convbank.export import export
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import ROOT


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pec-src")
    write_pec(root, 6000, seed=3, speakers=700)
    return root


def _build(root: Path, source: Path, workers: int) -> Bank:
    bank = Bank(root / "bank")
    fetcher = Fetcher(sources=[source], verify=False, progress=False, root=root / "home")
    report = build(
        ["pec"], config="happy", fetcher=fetcher, bank=bank, engine=LocalEngine(workers), batch_size=500
    )
    assert report.ok and [(s.split, s.conversations) for s in report.splits] == [
        ("train", 6000),
        ("valid", 600),
        ("test", 600),
    ]
    return bank


def test_pieces_written_by_workers_read_as_one_bank(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "PIECE_BYTES", 200_000)  # cut the train split in several pieces
    one = _build(tmp_path / "one", source, 1)
    many = _build(tmp_path / "many", source, 2)
    files = many.manifest().datasets["pec"].configs["happy"].files
    assert isinstance(files["turns"]["train"], list) and len(files["turns"]["train"]) >= 4
    assert not isinstance(one.manifest().datasets["pec"].configs["happy"].files["turns"]["train"], list)
    a, b = load("pec", "happy", bank=one), load("pec", "happy", bank=many)
    assert list(a) == list(b)  # every conversation, in source order
    ids = [c.conversation_id for c in a]
    assert b.take(ids[::-97]) == a.take(ids[::-97])
    for cid in (ids[0], ids[2999], ids[5999], ids[-1]):
        assert b[cid] == a[cid] and b.neighbours(cid) == a.neighbours(cid)
    assert b[4321] == a[4321] and len(b) == len(a) == 7200
    assert b.to_arrow("turns").equals(a.to_arrow("turns"))
    query = "SELECT split, count(*) AS n, sum(num_turns) AS t FROM conversations GROUP BY 1 ORDER BY 1"
    assert sql(query, bank=many).to_pylist() == sql(query, bank=one).to_pylist()
    assert many.doctor().problems == [] and many.doctor().leftovers == []
    export(b, "source", tmp_path / "out")
    for name in ("train", "valid", "test", "persona"):
        exported = (tmp_path / "out" / "hf_pec" / "happy" / f"{name}.txt").read_bytes()
        assert exported == (source / "hf_pec" / "happy" / f"{name}.txt").read_bytes(), name


def test_seen_ids_find_the_first_repeat_in_build_order() -> None:
    """The compact id check (64-bit hashes, 16 bytes a conversation) gives the first repeat
    in build order with where its id was first, across splits and pieces."""
    from convbank.build import SeenIds

    ids = {"train": ["a", "b", "c", "d", "b"], "valid": ["e", "a"]}
    seen = SeenIds()
    seen.add("train", 0, ids["train"][:3])
    seen.add("train", 3, ids["train"][3:])
    seen.add("valid", 0, ids["valid"])
    assert seen.repeat(lambda split, i: ids[split][i]) == ("b", "train", 4, "train", 1)
    clean = SeenIds()
    clean.add("train", 0, ["x", "y"])
    clean.add("valid", 0, ["z"])
    assert clean.repeat(lambda split, i: "unused") is None


def test_an_unguarded_script_is_not_run_again_by_workers(tmp_path: Path, source: Path) -> None:
    """Workers are plain processes: a script without ``if __name__ == "__main__":`` that
    builds on several cores and runs limited SQL runs once (multiprocessing's spawn would
    import it again in every child)."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import convbank.engines.local as local\n"
        "from pathlib import Path\n"
        "from convbank import build, sql\n"
        "from convbank.engines.local import LocalEngine\n"
        "from convbank.fetch import Fetcher\n"
        "from convbank.store import Bank\n"
        "print('ran', flush=True)\n"
        "local.PIECE_BYTES = 200_000\n"
        f"bank = Bank(Path({str(tmp_path / 'bank')!r}))\n"
        f"fetcher = Fetcher(sources=[Path({str(source)!r})], verify=False, progress=False, root=Path({str(tmp_path / 'home')!r}))\n"
        "build(['pec'], config='happy', fetcher=fetcher, bank=bank, engine=LocalEngine(2))\n"
        "print(sql('SELECT count(*) AS n FROM conversations', bank=bank, timeout=30).to_pylist())\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["ran", "[{'n': 7200}]"]


def test_the_build_workers_are_forked_where_they_may_be(tmp_path: Path) -> None:
    """A worker forked from the building process starts in milliseconds with what the parent
    imported (a new interpreter spent about 0.6 s of CPU a worker on imports, measured here):
    in a fresh process (one thread, no DuckDB database), each worker sees what the parent set
    at run time."""
    (tmp_path / "probe.py").write_text(
        "import os\nSTATE = {}\n\ndef seen(number):\n    return number, STATE.get('set')\n", encoding="utf-8"
    )
    script = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); import probe\n"
        "from convbank._workers import map_in_order, may_fork\n"
        "probe.STATE['set'] = os.getpid()\n"
        "print(may_fork(), list(map_in_order(probe.seen, range(4), 2)) == [(n, os.getpid()) for n in range(4)])"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["True", "True"]
