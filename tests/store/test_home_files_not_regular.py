"""A FIFO, a device or a huge file in the place of the bank's manifest, or of the home's
``sources.json``, is said at once and never waited on or read without end: the manifest is
a damaged bank (one line naming it, exit 4) in every command, ``sources.json`` one line,
exit 2 (before: ``list``, ``doctor``, ``query``, ``build`` and ``import`` all waited for
ever on a FIFO manifest; ``build`` and ``fetch`` on a FIFO ``sources.json``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from convbank import load
from convbank.errors import DamagedBankError
from convbank.store import Bank
from testsupport import ROOT, SHARED

CHAT = json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n"


def _convbank(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convbank", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,  # before: a FIFO was waited on for ever
        check=False,
    )


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as f:
        f.write(b'{"datasets": {')
        f.truncate(size)


IN_PLACE: dict[str, tuple[Callable[[Path], object], str]] = {
    "a FIFO": (os.mkfifo, "is a FIFO (named pipe), not a regular file"),
    "a device": (lambda p: p.symlink_to("/dev/zero"), "is a device, not a regular file"),
    "a file of 300 MiB": (lambda p: _sparse(p, 300 << 20), "is larger than 268,435,456 bytes"),
}


@pytest.mark.parametrize("kind", list(IN_PLACE))
def test_a_manifest_that_is_not_a_regular_file_is_a_damaged_bank_at_once(kind: str, tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    chats.write_text(CHAT, encoding="utf-8")
    assert _convbank("import", str(chats), "--name", "mine").returncode == 0
    manifest = Path(os.environ["CONVBANK_HOME"]) / "bank" / "manifest.json"
    manifest.unlink()
    make, said = IN_PLACE[kind]
    make(manifest)
    for args in (["list"], ["doctor"], ["query", "SELECT 1"], ["import", str(chats), "--name", "other"]):
        done = _convbank(*args)
        assert done.returncode == 4, (args, done.stderr)
        assert done.stderr == (
            f"error: the bank is damaged: {manifest} {said}; delete the bank folder and build again\n"
        ), args


def test_a_sources_file_that_is_a_fifo_is_one_line(tmp_path: Path) -> None:
    home = Path(os.environ["CONVBANK_HOME"])
    home.mkdir(parents=True)
    os.mkfifo(home / "sources.json")
    done = _convbank("build", "casino", "--source", str(SHARED))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: {home / 'sources.json'}: not a JSON object of source files to their paths (a FIFO "
        "(named pipe), not a regular file); delete it to record anew\n"
    )


LOCK_IN_PLACE: dict[str, tuple[Callable[[Path], object], str]] = {
    "a FIFO": (os.mkfifo, "a FIFO (named pipe)"),
    "a link to a FIFO": (
        lambda p: (os.mkfifo(p.with_name("elsewhere")), p.symlink_to("elsewhere")),
        "a symbolic link",
    ),
    "a link to a device": (lambda p: p.symlink_to("/dev/zero"), "a symbolic link"),
}


@pytest.mark.parametrize("kind", list(LOCK_IN_PLACE))
def test_a_generation_lock_that_is_not_a_regular_file_is_a_damaged_bank_at_once(
    kind: str, casino_home: Bank
) -> None:
    """Readers pin their generation by locking ``.generations/<id>.lock``: a FIFO there (or a
    link) is one line naming it, exit 4, at once in every reader (before: ``query``,
    ``doctor`` and ``load`` waited for ever opening the FIFO); a build still builds, keeping
    the generation whose lock it cannot take, and the new one reads."""
    lock = casino_home.root / ".generations" / f"{casino_home.manifest().generation}.lock"
    lock.unlink()
    make, said = LOCK_IN_PLACE[kind]
    make(lock)
    for args in (["query", "SELECT count(*) FROM turns"], ["doctor"]):
        done = _convbank(*args)
        assert done.returncode == 4, (args, done.stderr)
        assert done.stderr == (
            f"error: the bank is damaged: {lock} is {said}, not a regular file; readers lock it to keep "
            "their generation of the bank: remove it and run the command again\n"
        ), args
    with pytest.raises(DamagedBankError, match="readers lock it"):
        load("casino")
    assert _convbank("build", "casino", "--source", str(SHARED)).returncode == 0
    assert lock.is_symlink() or lock.exists()  # its generation kept: who holds it cannot be told
    done = _convbank("query", "SELECT count(*) AS n FROM turns", "--format", "csv")
    assert (done.returncode, done.stdout) == (0, "n\n14297\n"), done.stderr


DEEP = "[" * 100_000 + "]" * 100_000


def test_a_record_nested_too_deep_is_damaged_never_a_traceback(tmp_path: Path) -> None:
    """`sources.json` (and `checksums.json`), an export's record or an extraction's, nested
    deeper than Python's JSON reader goes, is a damaged record like any other (before:
    `RecursionError: maximum recursion depth exceeded` escaped `list`, `info` and `fetch` as a
    traceback, exit 1, 3 of 3 commands; the export's and extraction's records alike)."""
    from convbank._archive import RECORD, intact
    from convbank.errors import ExportError
    from convbank.export._place import RECORD as EXPORTS
    from convbank.export._place import _load

    home = Path(os.environ["CONVBANK_HOME"])
    home.mkdir(parents=True)
    (home / "sources.json").write_text(DEEP, encoding="utf-8")
    done = _convbank("list")
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {home / 'sources.json'}: not a JSON object of source files to their paths (nested "
        "deeper than Python's JSON reader goes); delete it to record anew\n",
    )
    (tmp_path / RECORD).write_text(DEEP, encoding="utf-8")
    assert intact(tmp_path) is False
    (tmp_path / EXPORTS).write_text(DEEP, encoding="utf-8")
    with pytest.raises(ExportError) as info:
        _load(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / EXPORTS} is unreadable (nested deeper than Python's JSON reader goes); remove it, "
        "or export into another folder"
    )
