"""A full disk at every write site ends in one line and keeps the old bank (issue 26.8): real
small filesystems at several levels of free space, run as the user runs convbank (a
subprocess, so that what finalisers print at exit is seen too), and ENOSPC injected at each
site in process."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.cli import cli
from convbank.errors import DiskFullError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import ROOT, SHARED, bank_files, mounted_tmpfs

CASINO = SHARED / "casino"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs (needs mount rights: root in CI)."""
    with mounted_tmpfs(tmp_path / "disk", "8m") as mount:
        yield mount


def _convbank(home: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "convbank", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _fill(disk: Path, free_kib: int) -> Path:
    """Leave about ``free_kib`` KiB free on ``disk``."""
    filler = disk / "filler"
    with filler.open("wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * max(0, shutil.disk_usage(disk).free - free_kib * 1024))
    return filler


def _one_line_full_disk(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "no space left" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("free_kib", [0, 16, 1024])
def test_full_disk_on_a_first_build_is_one_line(small_disk: Path, free_kib: int) -> None:
    """A fresh home on a full disk: sources.json, locks, staging all fail to be written."""
    _fill(small_disk, free_kib)
    done = _convbank(small_disk / "home", "build", "casino", "--source", CASINO)
    _one_line_full_disk(done)


@pytest.mark.parametrize("free_kib", [0, 16, 256, 1800])
def test_full_disk_on_a_rebuild_keeps_the_bank(small_disk: Path, free_kib: int) -> None:
    home = small_disk / "home"
    assert _convbank(home, "build", "casino", "--source", CASINO).returncode == 0
    (home / "sources.json").unlink()  # written again by the next build
    before = bank_files(Bank(home / "bank"))
    filler = _fill(small_disk, free_kib)
    done = _convbank(home, "build", "casino", "--source", CASINO, "--config", "default")
    if done.returncode == 0:  # room enough for the new generation (only at the largest levels)
        assert free_kib >= 1024, done.stderr
    else:
        _one_line_full_disk(done)
    filler.unlink()
    assert _convbank(home, "doctor").returncode == 0
    if done.returncode != 0:
        with Bank(home / "bank").lock():
            pass
        assert bank_files(Bank(home / "bank")) == before


# ---------------------------------------------------------------------- injected, site by site
def _enospc(*args: object, **kwargs: object) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


SITES = ["sources.json", "lock", "staging write", "staging close", "fsync", "manifest"]


@pytest.mark.parametrize("site", SITES)
def test_enospc_at_each_write_site_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: str
) -> None:
    import filelock

    import convbank._homefiles as homefiles
    import convbank.store.bank as bank_module
    import convbank.store.staging as staging_module

    home = tmp_path / "home"
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    assert CliRunner().invoke(cli, ["build", "casino", "--source", CASINO]).exit_code == 0
    (home / "sources.json").unlink()
    before = bank_files(Bank(home / "bank"))
    if site == "sources.json":  # write() names no file
        monkeypatch.setattr(homefiles, "atomic_write_text", _enospc)
    elif site == "lock":
        shutil.rmtree(home / "locks")
        (home / "bank" / ".lock").unlink()

        def acquire(self: filelock.BaseFileLock) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", self.lock_file)

        monkeypatch.setattr(filelock.UnixFileLock, "_acquire", acquire)
    elif site == "staging write":
        monkeypatch.setattr(pq.ParquetWriter, "write_table", _enospc)
    elif site == "staging close":
        real_close = pq.ParquetWriter.close

        def close(self: pq.ParquetWriter) -> None:
            real_close(self)
            _enospc()

        monkeypatch.setattr(pq.ParquetWriter, "close", close)
    elif site == "fsync":
        monkeypatch.setattr(staging_module, "fsync_file", _enospc)
    else:
        monkeypatch.setattr(bank_module, "atomic_write_text", _enospc)
    result = CliRunner().invoke(cli, ["build", "casino", "--source", CASINO])
    monkeypatch.undo()
    if site == "sources.json":  # a convenience: not remembered, the build goes on
        assert result.exit_code == 0, result.output
        assert not (home / "sources.json").exists()
        return
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and "no space left" in result.output, result.output
    assert bank_files(Bank(home / "bank")) == before


def test_enospc_recording_a_checksum_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checksum recorded on first use (a file with no published sha256: ConvAI2's
    data_tolokers.json) must be written: a full disk there is a DiskFullError (exit 1)
    naming the home."""
    import convbank._homefiles as homefiles

    convai2 = catalog.get("convai2")
    source = tmp_path / "source"
    source.mkdir()
    (source / "data_tolokers.json").write_text("[]\n", encoding="utf-8")
    monkeypatch.setattr(homefiles, "atomic_write_text", _enospc)
    home = tmp_path / "home"
    with pytest.raises(DiskFullError) as info:
        Fetcher(sources=[source], root=home, progress=False).get(convai2, convai2.file("data_tolokers.json"))
    assert info.value.exit_code == 1
    assert str(info.value) == (
        f"CONVBANK_HOME {home}: no space left writing {home}; free some space or point "
        "CONVBANK_HOME at a writable folder"
    )


@pytest.mark.parametrize(
    ("errno_", "message"),
    [
        (errno.ENOSPC, "no space left on the device; free some space and try again"),
        (errno.ENOENT, "No such file or directory; check that the path exists and can be written"),
    ],
)
def test_enospc_writing_elsewhere_is_one_line(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errno_: int, message: str
) -> None:
    """An export, a report or bench results on a full disk (or a path that cannot be made)."""
    from convbank import export

    out = tmp_path / "out"

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(errno_, os.strerror(errno_), str(out / "part.jsonl"))

    monkeypatch.setattr(export, "export", fail)
    result = CliRunner().invoke(cli, ["export", "casino", "--format", "jsonl", "-o", out])
    assert (result.exit_code, result.output) == (1, f"error: {out / 'part.jsonl'}: {message}\n")


def test_a_full_disk_during_an_hf_export_is_one_line(built: Bank, tmp_path: Path) -> None:
    """``datasets`` wraps the ENOSPC of its Arrow writer in a ``DatasetGenerationError``: the
    export says what it was, in one line, exit 1 (before: a 76-line traceback, exit 1)."""
    with mounted_tmpfs(tmp_path / "disk", "2m") as mount:
        result = CliRunner().invoke(cli, ["export", "casino", "--format", "hf", "-o", str(mount / "out")])
        assert result.exit_code == 1, result.output
        assert result.output.count("\n") == 1 and result.output.startswith("error: ")
        assert "no space left on the device; free some space and try again" in result.output
        assert not any(p.name.startswith(".") and p.name.endswith(".tmp") for p in mount.rglob("*"))


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "chat", "hf"])
def test_a_full_disk_during_a_real_export_names_the_folder(built: Bank, tmp_path: Path, fmt: str) -> None:
    """Third round. Before: an export filling a real 1 MiB tmpfs was ``error: no space left on
    the device; free some space and try again``, naming no file or folder (the write that
    failed names none). Now the export's folder is named; exit 1, the folder left empty."""
    with mounted_tmpfs(tmp_path / "disk", "1m") as mount:
        out = mount / "out"
        result = CliRunner().invoke(cli, ["export", "casino", "--format", fmt, "-o", str(out)])
        assert (result.exit_code, result.output) == (
            1,
            f"error: {out}: no space left on the device; free some space and try again\n",
        )
        assert not out.exists() or sorted(p.name for p in out.iterdir()) == []


def test_a_file_size_limit_during_an_export_names_the_folder(built: Bank, tmp_path: Path) -> None:
    """Third round. Before, under ``ulimit -f 512``: ``error: File too large; check that the
    path exists and can be written``, no file named. Now the export's folder is named."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 1024, 512 * 1024))

    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "convbank", "export", "casino", "--format", "jsonl", "-o", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,  # the child sets its own limit before it starts
        check=False,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (
        1,
        f"error: {out}: File too large; check that the path exists and can be written\n",
    )
    assert not out.exists()


def _rejects_input(path: Path) -> Path:
    """A chat file of 3,000 records, every one bad: 350 KB of rejects."""
    path.write_text("".join(f'{{"id": "z{i}", "messages": "{"x" * 100}"}}\n' for i in range(3000)))
    return path


@pytest.mark.parametrize("what", ["report", "write-predictions", "skip-bad"])
def test_a_full_disk_while_a_file_is_written_whole_names_it_and_leaves_nothing(
    built: Bank, tmp_path: Path, what: str
) -> None:
    """Fourth round. Before, on a real 64 KiB tmpfs: ``report -o``, ``bench
    --write-predictions`` and ``import --skip-bad`` said ``error: no space left on the
    device; free some space and try again``, naming no file (a write names none), and the
    rejects' temporary file (``.rej.jsonl.<pid>.<random>.tmp``, 36 KB) stayed, since closing
    it failed again on what was still buffered. Now the file is named, exit 1, nothing left."""
    with mounted_tmpfs(tmp_path / "disk", "64k") as mount:
        (mount / "fill").write_bytes(b"\0" * 40_000)
        target = mount / {"report": "r.html", "write-predictions": "p.jsonl", "skip-bad": "rej.jsonl"}[what]
        args = {
            "report": ["report", "casino", "-o", str(target)],
            "write-predictions": [
                "bench",
                "casino-strategy",
                "-m",
                "random",
                "--write-predictions",
                str(target),
            ],
            "skip-bad": [
                "import",
                str(_rejects_input(tmp_path / "bad.jsonl")),
                "--name",
                "mine",
                "--format",
                "chat",
                "--skip-bad",
                str(target),
            ],
        }[what]
        for _ in range(2):
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 1, result.output
            assert result.stderr.splitlines()[-1] == (  # bench's progress lines before it
                f"error: {target}: no space left on the device; free some space and try again"
            )
            assert "Traceback" not in result.output
            assert sorted(p.name for p in mount.iterdir()) == ["fill"]


def test_a_file_size_limit_while_a_report_is_written_names_it(built: Bank, tmp_path: Path) -> None:
    """Fourth round. Before, under ``ulimit -f 1``: ``error: File too large; check that the
    path exists and can be written``, no file named. Now the report's file is."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    out = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "convbank", "report", "casino", "-o", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (
        1,
        f"error: {out}: File too large; check that the path exists and can be written\n",
    )
    assert os.listdir(tmp_path) == []
