"""Exports and their record (issue 35, item 8, and item 3's last part): exports into one
folder at once keep every entry of ``.convbank-exports.json``; an ``--overwrite`` killed at
any point leaves the old export whole or the new one whole, its record saying which; an
export never writes or deletes outside its folder through a symbolic link; SIGTERM removes
an export's staging folder as Ctrl-C does, and the staging folders of killed exports are
removed by the next export.

Processes are stopped at known points with ``CONVBANK_TEST_PAUSE=POINT:FILE`` (the export
creates FILE there and waits until it is removed), so that a kill is not a race with a sleep;
seeded random delays kill some exports mid-write as well."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank import load
from convbank.cli import cli
from convbank.export import export
from convbank.export._place import LOCK, RECORD, STAGING
from convbank.store import Bank

FORMATS = ("jsonl", "csv", "chat", "parlai", "parquet")
WHERE = "num_turns > 10"
OLD = {"train": 900, "valid": 30, "test": 100}
TERMINATED = "terminated (SIGTERM): stopped; nothing half-written was kept\n"


def _start(out: Path, *args: str, pause: tuple[str, Path] | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("CONVBANK_TEST_PAUSE", None)
    if pause is not None:
        env["CONVBANK_TEST_PAUSE"] = f"{pause[0]}:{pause[1]}"
    command = [sys.executable, "-m", "convbank", "export", "casino", *args, "-o", str(out)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(marker: Path, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"ended before {marker.name}: {proc.returncode} {proc.stderr.read()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, f"no {marker.name} after {timeout} s"
        time.sleep(0.02)


def _leftovers(out: Path) -> list[str]:
    """Staging folders and temporary files in ``out`` and beside it."""
    inside = [p.name for p in out.iterdir() if p.name.startswith(STAGING) or p.name.endswith(".tmp")]
    beside = [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    return inside + beside


def _record(out: Path) -> dict[str, dict[str, object]]:
    data = json.loads((out / RECORD).read_text(encoding="utf-8"))
    assert set(data) == {"exports"}, data  # no moves left unfinished
    exports: dict[str, dict[str, object]] = data["exports"]
    return exports


def _lines(out: Path) -> dict[str, int]:
    return {
        p.name.split("_")[2].removesuffix(".jsonl"): len(p.read_bytes().splitlines())
        for p in sorted(out.glob("casino_default_*.jsonl"))
    }


def test_exports_at_once_into_one_folder_keep_every_record(built: Bank, tmp_path: Path) -> None:
    """Before: the record kept the last writer's entries (csv lost), and a later ``export
    --format csv`` was refused ("convbank did not write it there")."""
    for round_ in range(5):
        out = tmp_path / f"round{round_}"
        if round_ < 3:  # all five wait once written, then are let go at the same moment
            markers = [tmp_path / f"{round_}-{fmt}" for fmt in FORMATS]
            procs = [
                _start(out, "--split", "valid", "--format", fmt, pause=("staged", m))
                for fmt, m in zip(FORMATS, markers, strict=True)
            ]
            for marker, proc in zip(markers, procs, strict=True):
                _wait_for(marker, proc)
            random.Random(round_).shuffle(markers)
            for marker in markers:
                marker.unlink()
        else:  # free-running
            procs = [_start(out, "--split", "valid", "--format", fmt) for fmt in FORMATS]
        for proc in procs:
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr
        record = _record(out)
        assert sorted({str(e["format"]) for e in record.values()}) == sorted(FORMATS), round_
        assert len(record) == 4 + 4  # one file per part each, four parquet tables
        assert _leftovers(out) == []
        again = CliRunner().invoke(
            cli, ["export", "casino", "--split", "valid", "--format", "csv", "-o", str(out)]
        )
        assert again.exit_code == 0, again.output
        assert again.output == f"{out / 'casino_default_valid.turns.csv'}\n"


@pytest.fixture
def old_and_new(built: Bank, tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A whole jsonl export of CaSiNo, and the line counts of the ``--where`` export."""
    old = tmp_path / "old"
    export(load("casino"), "jsonl", old)
    assert _lines(old) == OLD
    new = tmp_path / "new"
    export(load("casino"), "jsonl", new, where=WHERE)
    counts = _lines(new)
    assert counts != OLD and set(counts) == set(OLD)
    return old, counts


def _whole(out: Path, new: dict[str, int]) -> str:
    """``old`` or ``new``: the files are one export whole, and the record names that export."""
    record = _record(out)
    jsonl = {k: v for k, v in record.items() if v["format"] == "jsonl"}
    assert sorted(jsonl) == [f"casino_default_{s}.jsonl" for s in ("test", "train", "valid")]
    wheres = {e["where"] for e in jsonl.values()}
    assert len(wheres) == 1, wheres
    which = "new" if wheres == {WHERE} else "old"
    assert _lines(out) == (new if which == "new" else OLD), which
    return which


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        ("staged", "old"),
        ("journal", "new"),
        ("moved", "new"),
        ("recorded", "new"),
        *[(f"seed{s}", None) for s in range(3)],
    ],
)
def test_a_killed_overwrite_leaves_one_export_whole(
    old_and_new: tuple[Path, dict[str, int]], tmp_path: Path, point: str, expected: str | None
) -> None:
    """Before: ``kill -9`` while the files moved in left train with 896 lines of the new
    export beside the others' old ones, the record naming the whole export."""
    old, new = old_and_new
    for attempt in range(2):
        out = tmp_path / f"out{attempt}"
        shutil.copytree(old, out)
        marker = tmp_path / f"marker{attempt}"
        args = ("--format", "jsonl", "--overwrite", "--where", WHERE)
        if point.startswith("seed"):
            proc = _start(out, *args)
            time.sleep(random.Random(int(point[4:]) * 10 + attempt).uniform(0.5, 4.0))
        else:
            proc = _start(out, *args, pause=(point, marker))
            _wait_for(marker, proc)
        proc.kill()  # SIGKILL: no cleanup runs
        proc.wait(timeout=60)
        if point in ("staged", "journal"):  # nothing moved yet: the old files, as they were
            assert {p.name: p.read_bytes() for p in old.glob("*.jsonl")} == {
                p.name: p.read_bytes() for p in out.glob("*.jsonl")
            }
        export(load("ccpe"), "csv", out)  # the next export into the folder finishes or drops it
        which = _whole(out, new)
        assert expected in (None, which), (point, which)
        assert _leftovers(out) == [] and sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [
            RECORD,
            LOCK,
        ]


def _tree_hash(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def test_an_export_never_writes_through_a_link_out_of_its_folder(built: Bank, tmp_path: Path) -> None:
    """Before: with ``ov/casino`` a link to a folder elsewhere, ``export casino --format hf -o ov
    --overwrite`` deleted ``elsewhere/default`` (moved it aside as the old export)."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "default").mkdir(parents=True)
    (elsewhere / "default" / "keep.txt").write_text("mine\n", encoding="utf-8")
    (elsewhere / "notes.txt").write_text("notes\n", encoding="utf-8")
    before = _tree_hash(elsewhere)
    ov = tmp_path / "ov"
    ov.mkdir()
    (ov / "casino").symlink_to(elsewhere)
    for extra in ([], ["--overwrite"]):
        result = CliRunner().invoke(cli, ["export", "casino", "--format", "hf", "-o", str(ov), *extra])
        assert result.exit_code == 2
        assert result.output == (
            f"error: {ov / 'casino'} is a symbolic link (to {elsewhere}); an export writes only inside "
            f"{ov}, never through a link: remove the link, or export into another folder\n"
        )
        assert _tree_hash(elsewhere) == before and (ov / "casino").is_symlink()
    # a link at the path itself is replaced, not followed
    (ov / "casino_convokit").symlink_to(elsewhere)
    (ov / "casino_default_valid.jsonl").symlink_to(elsewhere / "notes.txt")
    for fmt in ("convokit", "jsonl"):
        args = ["export", "casino", "--split", "valid", "--format", fmt, "-o", str(ov), "--overwrite"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
    assert (
        not (ov / "casino_convokit").is_symlink() and (ov / "casino_convokit" / "utterances.jsonl").is_file()
    )
    assert not (ov / "casino_default_valid.jsonl").is_symlink()
    assert _lines(ov) == {"valid": 30}
    assert _tree_hash(elsewhere) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_sigterm_and_kill_leave_no_staging_behind(built: Bank, tmp_path: Path, seed: int | None) -> None:
    """Before: SIGTERM left ``.out.*.tmp`` beside the folder, and no later export removed it
    (nor a killed export's)."""
    out = tmp_path / "out"
    export(load("casino", split="valid"), "jsonl", out)
    kept = {p.name: p.read_bytes() for p in out.iterdir()}
    marker = tmp_path / "marker"
    if seed is None:
        proc = _start(out, "--format", "jsonl", "--overwrite", pause=("staged", marker))
        _wait_for(marker, proc)
    else:
        proc = _start(out, "--format", "jsonl", "--overwrite")
        time.sleep(random.Random(seed).uniform(0.5, 3.0))
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    if seed is None:
        assert (proc.returncode, stderr) == (143, TERMINATED)
    else:  # a seeded SIGTERM may come before the handler is set or after it is put back (-15)
        assert proc.returncode in (0, 143, -signal.SIGTERM), stderr
        assert proc.returncode != 143 or stderr == TERMINATED
    now = {p.name: p.read_bytes() for p in out.iterdir()}
    if now != kept:  # stopped after its files moved in (or ended): the new export, whole
        assert seed is not None and _lines(out) == OLD
        assert {
            e["parts"] == ["default/train", "default/valid", "default/test"] for e in _record(out).values()
        } == {True}
    assert _leftovers(out) == []
    marker.unlink(missing_ok=True)
    killed = _start(out, "--format", "jsonl", "--overwrite", pause=("staged", marker))
    _wait_for(marker, killed)
    killed.kill()
    killed.wait(timeout=60)
    assert [p.name.split(".")[2] for p in out.iterdir() if p.name.startswith(STAGING)] == [str(killed.pid)]
    export(load("ccpe"), "jsonl", out)  # the next export removes the killed one's staging
    assert _leftovers(out) == []


def test_a_record_that_is_a_link_is_refused(built: Bank, tmp_path: Path) -> None:
    """Before: with ``out/.convbank-exports.json`` a link to another folder's record, an export
    read that record as its own (listing files the folder does not hold) and wrote it back."""
    other = tmp_path / "other"
    args = ["export", "casino", "--split", "valid", "--format", "jsonl"]
    assert CliRunner().invoke(cli, [*args, "-o", str(other)]).exit_code == 0
    theirs = (other / RECORD).read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    (out / RECORD).symlink_to(other / RECORD)
    result = CliRunner().invoke(
        cli, ["export", "casino", "--split", "valid", "--format", "csv", "-o", str(out)]
    )
    assert result.exit_code == 2
    assert result.output == (
        f"error: {out / RECORD} is a symbolic link; an export reads only its own folder's record: "
        "remove the link, or export into another folder\n"
    )
    assert (other / RECORD).read_bytes() == theirs and sorted(p.name for p in out.iterdir()) == [RECORD]


@pytest.mark.parametrize("variant", ["up", "absolute", "linked", "link-inside"])
def test_a_record_naming_a_staging_folder_outside_moves_and_deletes_nothing(
    built: Bank, tmp_path: Path, variant: str
) -> None:
    """Third round. Before: a record whose unfinished move (``moving``) named its staging
    folder ``../victim`` or ``/abs/victim`` made the next export into the folder delete that
    folder outside it (``shutil.rmtree``); a staging folder that is a link out, or holds one,
    had its files moved out of the folder they were in, into the export's. Now the record is
    refused (one line, exit 2) and the folder outside is as it was."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n", encoding="utf-8")
    before = _tree_hash(victim)
    out = tmp_path / "out"
    out.mkdir()
    staging, paths = {"up": ("../victim", []), "absolute": (str(victim), [])}.get(
        variant, (f"{STAGING}1.x.tmp", ["keep.txt"])
    )
    if variant == "linked":
        (out / staging).symlink_to(victim)
    if variant == "link-inside":
        (out / staging).mkdir()
        (out / staging / "sub").symlink_to(victim)
        paths = ["sub/keep.txt"]
    moved = {"dataset": "casino", "format": "csv", "parts": ["default/valid"], "where": None, "as": None}
    record = {"exports": {}, "moving": {"staging": staging, "paths": paths, "export": moved}}
    (out / RECORD).write_text(json.dumps(record), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["export", "casino", "--split", "valid", "--format", "csv", "-o", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error: "), result.output
    expected = {
        "up": f"{out / RECORD} is not convbank's record of exports",
        "absolute": f"{out / RECORD} is not convbank's record of exports",
        "linked": f"{out / staging} is a symbolic link (to {victim})",
        "link-inside": f"{out / staging / 'sub'} is a symbolic link (to {victim})",
    }[variant]
    assert expected in result.output
    assert _tree_hash(victim) == before
    assert not (out / "keep.txt").exists() and not (out / "sub").exists()


def test_a_record_that_is_a_fifo_is_refused_not_waited_on(built: Bank, tmp_path: Path) -> None:
    """Third round. Before: with ``.convbank-exports.json`` a FIFO, every export into the
    folder waited on it for ever (killed after 10 s here). Now one line, exit 2, at once."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / RECORD)
    command = [sys.executable, "-m", "convbank", "export", "casino", "--split", "valid", "--format", "csv"]
    started = time.monotonic()
    done = subprocess.run([*command, "-o", str(out)], capture_output=True, text=True, timeout=30, check=False)
    assert time.monotonic() - started < 20
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: {out / RECORD} is unreadable (a FIFO (named pipe), not a regular file); remove it, "
        "or export into another folder\n"
    )


@pytest.mark.parametrize("kind", ["a link to a file outside", "a dangling link", "a folder", "a FIFO"])
def test_a_lock_that_is_not_a_file_is_refused_in_one_line(built: Bank, tmp_path: Path, kind: str) -> None:
    """Fourth round. Before: ``.convbank-exports.lock`` a symbolic link (to a file outside,
    or to none) or a folder was exit 1, ``Too many levels of symbolic links`` or ``Is a
    directory; check that the path exists and can be written``, where the record in its
    place is exit 2 (and a FIFO was taken as the lock). Now each is one line, exit 2, and
    nothing outside the folder changes."""
    out, outside = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    outside.write_text("precious\n")
    lock = out / LOCK
    what = {
        "a link to a file outside": lambda: lock.symlink_to(outside) or f"a symbolic link (to {outside})",
        "a dangling link": lambda: (
            lock.symlink_to(tmp_path / "none") or f"a symbolic link (to {tmp_path / 'none'})"
        ),
        "a folder": lambda: lock.mkdir() or "a folder",
        "a FIFO": lambda: os.mkfifo(lock) or "a FIFO (named pipe)",
    }[kind]()
    result = CliRunner().invoke(
        cli, ["export", "casino", "--split", "valid", "--format", "csv", "-o", str(out)]
    )
    assert (result.exit_code, result.output) == (
        2,
        f"error: {lock} is {what}, not convbank's lock of exports; remove it, or export into another folder\n",
    )
    assert sorted(os.listdir(out)) == [LOCK] and outside.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["out", "victim.txt"]


_KILLED_WHILE_RECORDING = """
import os, sys, time
real = os.replace
def replace(src, dst, *a, **k):
    if os.path.basename(dst) == {record!r}:
        open({marker!r}, "w").close()
        time.sleep(600)  # killed here: the record's temporary file written, not yet in place
    return real(src, dst, *a, **k)
os.replace = replace
sys.argv = ["convbank", "export", "casino", "--split", "valid", "--format", {fmt!r}, "-o", {out!r}, "--overwrite"]
from convbank.cli.main import main
main()
"""


@pytest.mark.parametrize("fmt", ["jsonl", "convokit"])
def test_a_record_killed_while_written_leaves_no_temporary_file(
    built: Bank, tmp_path: Path, fmt: str
) -> None:
    """Before: ``..convbank-exports.json.<random>.tmp`` stayed in the folder for good (found by
    seeded ``kill -9`` of ``--overwrite`` in 3 of 8 rounds of ``convokit``); the next export
    into the folder now removes it, under the lock (the record is written under it only)."""
    out = tmp_path / "out"
    export(load("casino", split="valid"), fmt, out)
    marker = tmp_path / "marker"
    script = _KILLED_WHILE_RECORDING.format(record=RECORD, marker=str(marker), fmt=fmt, out=str(out))
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_for(marker, proc)
    proc.kill()
    proc.wait(timeout=60)
    assert [p.name for p in out.iterdir() if p.name.startswith(f".{RECORD}.")] != []  # what the kill left
    export(load("ccpe"), "jsonl", out)  # the next export into the folder
    assert _leftovers(out) == []
    assert {e["dataset"] for e in _record(out).values()} == {"casino", "ccpe"}


@pytest.mark.parametrize(
    "entry",
    [
        {"dataset": "casino", "format": "jsonl", "parts": [1]},
        {"parts": [None]},
        {"dataset": "casino", "format": "jsonl", "parts": ["default/train"], "where": 3},
    ],
)
def test_a_damaged_entry_of_the_record_is_no_exports_never_a_traceback(
    built: Bank, tmp_path: Path, entry: dict[str, object]
) -> None:
    """Before: an entry whose parts were not text was a ``TypeError: sequence item 0:
    expected str instance, int found`` traceback, exit 1, as the refusal described it, 2 of 2
    entries. Now an entry that is not an export as convbank records it is no export's."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "casino_default_train.jsonl").write_text("mine\n", encoding="utf-8")
    (out / RECORD).write_text(
        json.dumps({"exports": {"casino_default_train.jsonl": entry}}), encoding="utf-8"
    )
    done = CliRunner().invoke(cli, ["export", "casino", "--format", "jsonl", "-o", str(out)])
    assert (done.exit_code, done.output) == (
        2,
        f"error: {out / 'casino_default_train.jsonl'} exists and convbank did not write it there; the jsonl "
        "export of casino (default/train, default/valid, default/test) would replace it: pass --overwrite "
        "(overwrite=True), or export into another folder\n",
    )
    assert (out / "casino_default_train.jsonl").read_text(encoding="utf-8") == "mine\n"
    moving = {"staging": f"{STAGING}1.x", "paths": ["casino_default_train.jsonl"], "export": entry}
    (out / RECORD).write_text(json.dumps({"exports": {}, "moving": moving}), encoding="utf-8")
    done = CliRunner().invoke(cli, ["export", "casino", "--format", "jsonl", "-o", str(out)])
    assert (done.exit_code, done.output) == (
        2,
        f"error: {out / RECORD} is not convbank's record of exports; remove it, or export elsewhere\n",
    )


@pytest.mark.parametrize("files", [[{"a": 1}], [["x"]]])
def test_a_folders_damaged_list_of_files_is_no_exports_never_a_traceback(
    built: Bank, tmp_path: Path, files: object
) -> None:
    """Pass 18. Before: a folder's entry whose ``files`` held an object or a list was a
    ``TypeError: unhashable type: 'dict'`` traceback, exit 1, at every later export into the
    folder, 2 of 2 runs (the CLI and ``export()``). Now such an entry is no export's: the folder
    is one that convbank did not write, one line, exit 2; ``--overwrite`` replaces it."""
    out = tmp_path / "out"
    args = ["export", "casino", "--format", "hf", "--split", "test", "-o", str(out)]
    assert CliRunner().invoke(cli, args).exit_code == 0
    record = json.loads((out / RECORD).read_text(encoding="utf-8"))
    record["exports"]["casino/default"]["files"] = files
    (out / RECORD).write_text(json.dumps(record), encoding="utf-8")
    done = CliRunner().invoke(cli, args)
    assert (done.exit_code, done.output) == (
        2,
        f"error: {out / 'casino' / 'default'} exists and convbank did not write it there; the hf export of "
        "casino (default/test) would replace it: pass --overwrite (overwrite=True), or export into another "
        "folder\n",
    )
    done = CliRunner().invoke(cli, [*args, "--overwrite"])
    assert done.exit_code == 0, done.output
    entry = json.loads((out / RECORD).read_text(encoding="utf-8"))["exports"]["casino/default"]
    assert entry["files"][0] == "dataset_dict.json"


def test_a_record_nested_past_the_decoders_depth_is_one_line(built: Bank, tmp_path: Path) -> None:
    """Pass 16. Before: a ``.convbank-exports.json`` (or a home's ``sources.json``,
    ``checksums.json``) of 100,000 ``[`` was a RecursionError traceback, exit 1, 2 of 2
    tries; every small JSON file convbank keeps is now read by one reader
    (``_atomic.read_json``), which says it in one line."""
    from convbank._homefiles import _Recorded
    from convbank.errors import FormatError

    out = tmp_path / "out"
    out.mkdir()
    (out / RECORD).write_text("[" * 100_000, encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["export", "casino", "--split", "valid", "--format", "csv", "-o", str(out)]
    )
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {out / RECORD} is unreadable (nested deeper than Python's JSON reader goes); "
        "remove it, or export into another folder\n",
    )
    (tmp_path / "checksums.json").write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(FormatError) as raised:
        _Recorded(tmp_path).get("https://example.org/a.json")
    assert str(raised.value) == (
        f"{tmp_path / 'checksums.json'}: not a JSON object of url to sha256 (nested deeper than "
        "Python's JSON reader goes); delete it to record anew"
    )


def test_a_folder_where_no_lock_can_be_made_is_one_line_not_a_wait(built: Bank, tmp_path: Path) -> None:
    """Pass 16. Before: ``export -o /proc/self`` (a folder that is there, in which a file
    cannot be created: ``ENOENT``) waited for ever, FileLock retrying the lock's creation
    (killed at 120 s, 2 of 2 tries). Now the lock's file is made before FileLock runs:
    one line, exit 1, as the folder's own creation failing is."""
    command = [sys.executable, "-m", "convbank", "export", "casino", "--split", "valid", "--format", "csv"]
    done = subprocess.run(
        [*command, "-o", "/proc/self"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (
        1,
        "error: /proc/self/.convbank-exports.lock: No such file or directory; check that the path "
        "exists and can be written\n",
    )
