"""An ``--overwrite`` replaces the exports it replaces whole (every path the record gives
them), atomically under ``kill -9``; and the record of exports stays bounded and is read once
per step, so that an export's cost follows the record's size, never its size times the
paths written (pass 20)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

import pytest

from convbank import load
from convbank.errors import ExportError
from convbank.export import _record, export
from convbank.export._place import JOURNAL, LOCK, RECORD, check_targets
from convbank.store import Bank

ALL = ["casino_default_test.turns.csv", "casino_default_train.turns.csv", "casino_default_valid.turns.csv"]


def _exports(out: Path) -> dict[str, dict[str, object]]:
    data = json.loads((out / RECORD).read_text(encoding="utf-8"))
    assert set(data) == {"exports"}, data
    exports: dict[str, dict[str, object]] = data["exports"]
    return exports


def _csv_files(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.csv"))


def test_an_overwrite_replaces_the_earlier_export_whole(built: Bank, tmp_path: Path) -> None:
    """Before: a narrower ``--where`` with ``--overwrite`` left the older export's valid and
    test files beside the new train file (the folder mixing two exports), 1 of 1."""
    out = tmp_path / "out"
    export(load("casino"), "csv", out)
    assert _csv_files(out) == ALL
    export(load("casino", split="train"), "csv", out, where="num_turns > 10", overwrite=True)
    assert _csv_files(out) == ["casino_default_train.turns.csv"]
    assert _exports(out) == {
        "casino_default_train.turns.csv": {
            "as": None,
            "dataset": "casino",
            "format": "csv",
            "parts": ["default/train"],
            "where": "num_turns > 10",
        }
    }


def test_an_overwrite_keeps_exports_it_does_not_replace(built: Bank, tmp_path: Path) -> None:
    """Another split's export, which shares no path with the new one, stays, and so does a
    file someone put into a folder of the export replaced."""
    out = tmp_path / "out"
    export(load("casino", split="valid"), "csv", out)
    export(load("casino", split="train"), "csv", out, overwrite=True)
    assert _csv_files(out) == ["casino_default_train.turns.csv", "casino_default_valid.turns.csv"]
    export(load("ccpe"), "jsonl", out)
    export(load("pec"), "hf", out)
    (out / "pec" / "offmychest" / "notes.txt").write_text("mine\n", encoding="utf-8")
    export(load("pec", config="happy"), "hf", out, where="num_turns > 1", overwrite=True)
    assert (out / "pec" / "offmychest" / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert (out / "ccpe_default_train.jsonl").is_file()
    assert {k: v["where"] for k, v in _exports(out).items() if k.startswith("pec")} == {
        "pec/happy": "num_turns > 1",
        "pec/offmychest": None,
    }


def _overwrite_paused_at_journal(out: Path, marker: Path) -> subprocess.Popen[bytes]:
    """``export casino --format csv --split train --overwrite --where 1=1 -o out`` in a process
    paused once its journal is written (``marker`` then exists), still running."""
    env = {**os.environ, "CONVBANK_TEST_PAUSE": f"journal:{marker}"}
    args = ["export", "casino", "--format", "csv", "--split", "train", "--overwrite", "--where", "1=1"]
    proc = subprocess.Popen([sys.executable, "-m", "convbank", *args, "-o", str(out)], env=env)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    return proc


def test_a_killed_overwrite_finishes_its_removals(built: Bank, tmp_path: Path) -> None:
    """``kill -9`` once the journal is written: the next export into the folder finishes the
    moves and the removals, the new export whole, nothing of the old one left."""
    out, marker = tmp_path / "out", tmp_path / "marker"
    export(load("casino"), "csv", out)
    proc = _overwrite_paused_at_journal(out, marker)
    proc.kill()
    proc.wait(timeout=30)
    export(load("ccpe"), "jsonl", out)  # the next export finishes the one killed
    assert _csv_files(out) == ["casino_default_train.turns.csv"]
    assert {k: v["where"] for k, v in _exports(out).items()} == {
        "casino_default_train.turns.csv": "1=1",
        "ccpe_default_train.jsonl": None,
    }


def test_a_record_past_its_bound_is_refused_before_anything_moves(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record that would grow past :data:`RECORD_LIMIT` (which no later export could
    read) refuses the export that would grow it, in one line, the folder as it was."""
    out = tmp_path / "out"
    export(load("ccpe"), "jsonl", out)
    before = (out / RECORD).read_bytes()
    monkeypatch.setattr(_record, "RECORD_LIMIT", len(before) + 10)
    with pytest.raises(ExportError) as caught:
        export(load("casino"), "csv", out)
    assert str(caught.value) == (
        f"{out / RECORD} would hold 4 paths in 622 bytes, more than the {len(before) + 10:,} a "
        "folder's record of exports may; export into another folder"
    )
    assert (out / RECORD).read_bytes() == before and _csv_files(out) == []


def test_an_export_reads_the_record_once_per_step(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a record of 250,000 entries took 46 s and 750 MB for one csv export (it was
    read six times, and each path written compared with each entry through pathlib); then
    (pass 21) parsed three times, its entries checked twice and the record written twice, 10.7
    s for one jsonl export beside an 8.2 MB record; now parsed once, each entry checked once,
    and the record written once (the journal of the moves is a small file of its own)."""
    out = tmp_path / "out"
    export(load("ccpe"), "jsonl", out)
    export(load("casino", split="valid"), "csv", out)
    calls: dict[str, int] = {"loads": 0, "dumps": 0, "checked": 0}
    real_check = _record._an_export

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a, **k: calls.update({name: calls[name] + 1}) or real(*a, **k)

    fake_json = SimpleNamespace(loads=counted("loads", json.loads), dumps=counted("dumps", json.dumps))
    monkeypatch.setattr(_record, "json", fake_json)
    monkeypatch.setattr(_record, "_an_export", counted("checked", real_check))
    export(load("casino", split="train"), "csv", out)
    assert calls == {"loads": 1, "dumps": 1, "checked": 2}  # the 2 entries, once
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [".convbank-exports.json", LOCK]


def test_a_journal_left_beside_its_written_record_removes_nothing_more(built: Bank, tmp_path: Path) -> None:
    """``kill -9`` between the record's write and the journal's removal: the next export
    finishes the journal, and removes no path the record no longer lists (a file put there
    since is kept), the export whole and recorded once."""
    out, marker = tmp_path / "out", tmp_path / "marker"
    export(load("casino"), "csv", out)
    proc = _overwrite_paused_at_journal(out, marker)
    journal = (out / JOURNAL).read_text(encoding="utf-8")
    assert json.loads(journal)["removing"] == ALL[:1] + ALL[2:]
    marker.unlink()
    assert proc.wait(timeout=60) == 0
    assert not (out / JOURNAL).exists()
    (out / JOURNAL).write_text(journal, encoding="utf-8")  # as if killed before its removal
    (out / json.loads(journal)["staging"]).mkdir()
    (out / ALL[0]).write_text("mine\n", encoding="utf-8")
    export(load("ccpe"), "jsonl", out, overwrite=True)
    assert (out / ALL[0]).read_text(encoding="utf-8") == "mine\n"
    assert {k: v["where"] for k, v in _exports(out).items()} == {
        "casino_default_train.turns.csv": "1=1",
        "ccpe_default_train.jsonl": None,
    }
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [".convbank-exports.json", LOCK]


def _old_overlaps(a: str, b: str) -> bool:
    pa, pb = PurePosixPath(a), PurePosixPath(b)
    return pa == pb or pa in pb.parents or pb in pa.parents


@pytest.mark.parametrize("seed", range(3))
def test_overlapping_is_pathlibs_overlap(seed: int) -> None:
    """The text look-up gives what pathlib gave, ``a//./b``, ``/a`` and ``..`` included."""
    rng = random.Random(seed)
    names = ["a", "b", "ab", ".", "..", "", "a.b"]
    paths = ["/" * rng.randint(0, 1) + "/".join(rng.choices(names, k=rng.randint(1, 4))) for _ in range(300)]
    rels = [p for p in paths[:20] if PurePosixPath(p).parts and p.strip("/.")]
    expected = [k for k in paths if any(_old_overlaps(k, r) for r in rels)]
    assert _record._overlapping(paths, rels) == expected


@pytest.mark.parametrize("key", ["removing", "paths"])
def test_a_journal_naming_a_path_outside_the_folder_is_no_record_of_convbanks(
    built: Bank, tmp_path: Path, key: str
) -> None:
    """A damaged journal whose paths to move or remove lead out of the folder (``../x``) is
    refused as no record of convbank's, with what to do, and nothing outside is touched
    (before: `'../victim' is not a path inside out`, saying nothing to do, 2 of 2)."""
    out, victim = tmp_path / "out", tmp_path / "victim"
    (out / ".convbank-staging.999999.x.tmp").mkdir(parents=True)
    victim.write_text("mine\n", encoding="utf-8")
    moving = {"staging": ".convbank-staging.999999.x.tmp", "paths": [], "removing": []}
    moving[key] = ["a/../../victim"]
    export_ = {"dataset": "a", "format": "csv", "parts": []}
    (out / RECORD).write_text(json.dumps({"exports": {}, "moving": {**moving, "export": export_}}))
    with pytest.raises(ExportError) as caught:
        export(load("ccpe"), "csv", out)
    assert str(caught.value) == (
        f"{out / RECORD} is not convbank's record of exports; remove it, or export elsewhere"
    )
    assert victim.read_text(encoding="utf-8") == "mine\n"


def test_many_paths_against_a_full_record_are_looked_up_in_time(tmp_path: Path) -> None:
    """20,000 entries against 20,000 paths, and an --overwrite replacing an export of 20,000
    paths whole: a look-up per entry, linear (before: each entry tested against each path's
    first part as text, 31 s for 5,000 paths against 70,000 entries)."""
    old = {"dataset": "d", "format": "csv", "parts": ["a"], "where": None, "as": None}
    record = {f"f{i}.csv": dict(old) for i in range(20_000)}
    rels = [f"f{i}.csv" for i in range(20_000)]
    start = time.monotonic()
    assert len(_record._overlapping(record, rels)) == 20_000
    assert len(_record.replaced_whole(record, rels[:5000], {**old, "where": "x"})) == 15_000
    with pytest.raises(ExportError, match=r"f19999\.csv holds the csv export of d \(a\); the csv export"):
        check_targets(tmp_path, rels[::-1], {**old, "where": "x"}, overwrite=False, record=record)
    assert time.monotonic() - start < 5


def test_threads_reading_two_folders_records_never_get_each_others() -> None:
    """The record last parsed is kept for the same bytes (one parse an export); two threads
    exporting into two folders at once each get their own folder's record and entries, never
    the other's: the bytes, their value and their checked entries are replaced as one (before:
    three attributes set one by one and the value read back after, which a thread switch in
    between could make the other folder's; found in review of pass 22)."""
    import threading

    records = {
        name: json.dumps(
            {"exports": {f"{name}.jsonl": {"dataset": name, "format": "jsonl", "parts": ["train"]}}}
        ).encode()
        for name in ("casino", "pec")
    }
    wrong: list[str] = []

    def read(name: str) -> None:
        for _ in range(20_000):
            data = _record._parsed(records[name])
            if set(data["exports"]) != {f"{name}.jsonl"} or set(_record._exports(data)) != {f"{name}.jsonl"}:
                wrong.append(name)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # a switch at almost every bytecode
    try:
        threads = [threading.Thread(target=read, args=(name,)) for name in records for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []
