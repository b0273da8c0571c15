"""A bank file that cannot be opened for want of what the process may hold (too many files
open: ``ulimit -n``) is said so, ``SetupError``, exit 5, never a damaged bank (before: `the
bank is damaged: ... is unreadable ([Errno 24] Too many open files ...); run convbank doctor
..., then convbank build pec to rebuild it`, exit 4, from ``query``, ``stats`` and
``convbank.sql`` under ``ulimit -n`` 8 to 32, 2 of 2 runs each)."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import types
from pathlib import Path

import pytest

import convbank
from convbank.errors import SetupError
from convbank.store import Bank
from convbank.store import snapshot as snapshot_module
from testsupport import ROOT


def test_too_many_open_files_is_not_damage(built: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_more(path: object, *args: object) -> int:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))

    monkeypatch.setattr(snapshot_module, "os", types.SimpleNamespace(**{**vars(os), "open": no_more}))
    with pytest.raises(SetupError) as caught:
        convbank.sql("SELECT count(*) FROM turns")
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert str(caught.value) == (
        f"{caught.value.path} could not be opened: this process may open no more files (its limit is "
        f"{limit:,}: ulimit -n); the bank is not damaged: raise the limit, or read fewer datasets at once, "
        "and run the command again"
    )
    assert caught.value.exit_code == 5


def _convbank_under(
    kind: int, limits: tuple[int, int], home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``python -m convbank ARGS`` over ``home`` with the resource ``kind`` (``RLIMIT_NOFILE``,
    ``RLIMIT_AS``) limited to ``limits`` (soft, hard)."""

    def low() -> None:
        resource.setrlimit(kind, limits)

    return subprocess.run(
        [sys.executable, "-m", "convbank", *args],
        env={**os.environ, "CONVBANK_HOME": str(home), "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=low,
    )


def test_a_query_worker_out_of_files_is_exit_5(built_home: Path) -> None:
    """Through the query's worker process too (the command line's default limits)."""

    done = _convbank_under(
        resource.RLIMIT_NOFILE, (32, 32), built_home, "query", "SELECT count(*) FROM turns"
    )
    assert done.returncode == 5, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert (
        "could not be opened: this process may open no more files (its limit is 32: ulimit -n)" in done.stderr
    )


@pytest.mark.parametrize("args", [["tables"], ["query", "SELECT 1"], ["stats", "casino"]])
def test_a_command_out_of_memory_is_one_line_exit_5(tmp_path: Path, args: list[str]) -> None:
    """Under ``ulimit -v`` (150 MB here: its imports fail) a command says memory ran out in
    one line, exit 5 (before: a ``MemoryError`` or ``ImportError: ... failed to map segment``
    traceback of 36 to 77 lines, exit 1, 4 of 4 runs each)."""
    done = _convbank_under(
        resource.RLIMIT_AS, (150_000 * 1024, resource.getrlimit(resource.RLIMIT_AS)[1]), tmp_path, *args
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        5,
        "",
        "error: this process may use no more memory (its limit is 146 MiB: ulimit -v); raise the limit, "
        "or ask for less, and run the command again\n",
    )


OUT_OF_DUCKDB_MEMORY = """
import sys
import convbank.stats, convbank.validate, convbank.store.sql as sql
low = lambda source, **kw: sql.connect(source, memory_limit="2MB")  # DuckDB runs out, nothing else
convbank.stats.connect = convbank.validate.connect = low
from convbank.cli import main
sys.argv = ["convbank", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", ["stats", "validate"])
def test_duckdb_out_of_memory_in_the_banks_own_queries_is_memory_not_damage(
    casino_home: Bank, command: str
) -> None:
    """DuckDB out of memory in convbank's own queries over a bank (statistics, checks) is said
    as memory, exit 5, never as a bank that cannot be read (before: "the bank at ... cannot be
    read (Out of Memory Error: ...); run `convbank doctor`", exit 4, 2 of 2 with DuckDB given
    2 MB; found by pass 21's A under `ulimit -v` 1.5 GB)."""
    done = subprocess.run(
        [sys.executable, "-c", OUT_OF_DUCKDB_MEMORY, command, "casino"],
        env={**os.environ, "CONVBANK_HOME": str(casino_home.root.parent), "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        5,
        "error: this process may use no more memory; raise the limit, or ask for less, and run the "
        "command again\n",
    )
