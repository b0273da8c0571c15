"""Hardening of the command line's edge: an unusable CONVBANK_HOME (below a file, or a real
read-only mount) is one line with exit code 5 for every command; SQL that starts with a dash is
SQL; --source folders that do not exist are a warning, or an error when none exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import convbank
from convbank.cli import cli
from convbank.cli._options import _sql_behind_dashes
from convbank.errors import SetupError
from convbank.store import Bank
from testsupport import SHARED, blocked_home


def run(*args: object) -> click.testing.Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _zips(folder: Path) -> Path:
    """A folder holding a small PEC-shaped hf_pec.zip."""
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "hf_pec.zip", "w") as zf:
        zf.writestr("hf_pec/happy/train.txt", "x\n")
    return folder


# ---------------------------------------------------------------------- CONVBANK_HOME
@pytest.mark.parametrize(
    ("args", "raised"),
    [
        (("fetch", "pec", "--source", "{zips}", "--no-verify"), SetupError),  # the fetcher's own
        (
            ("build", "casino", "--source", SHARED),
            SetupError,
        ),  # the rest: the bank's reader's (the OSError its cause)
        (("list",), SetupError),
        (("info", "casino"), SetupError),
        (("show", "casino", "938"), SetupError),
        (("stats", "casino"), SetupError),
        (("validate", "casino"), SetupError),
    ],
)
def test_unusable_home_is_one_line_with_exit_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[object, ...], raised: type[Exception]
) -> None:
    home, blocker = blocked_home(tmp_path, monkeypatch)
    zips = _zips(tmp_path / "zips")
    argv = [str(a).format(zips=zips) for a in args]
    result = run(*argv)
    assert result.exit_code == 5
    assert result.stderr == (
        f"error: CONVBANK_HOME {home}: {blocker} is a file, not a folder; move it away or point "
        "CONVBANK_HOME at a writable folder\n"
    )
    assert result.stdout == ""
    debug = run("--debug", *argv)  # the traceback is still there when asked for
    assert type(debug.exception) is raised and debug.exit_code == 1
    if args[0] != "fetch":
        assert type(debug.exception.__cause__) is NotADirectoryError


def _read_only_mount_works(where: Path) -> str | None:
    """Why a read-only mount cannot be made here, or None when it can."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return "needs Linux with unshare(1)"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o ro tmpfs "$0" && ! touch "$0/x" 2>/dev/null', where],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return f"cannot mount a read-only tmpfs in a private mount namespace: {probe.stderr.strip()[:120]}"
    return None


def test_read_only_mount_as_home(tmp_path: Path) -> None:
    """A real read-only file system (a tmpfs mounted ro in a private mount namespace): root
    cannot write there either."""
    home = tmp_path / "ro-home"
    home.mkdir()
    reason = _read_only_mount_works(home)
    if reason:
        pytest.skip(reason)
    zips = _zips(tmp_path / "zips")
    env = {**os.environ, "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(convbank.__file__).parents[1]), env.get("PYTHONPATH", "")])
    script = 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"'
    cli_ = [sys.executable, "-c", "from convbank.cli import main; main()"]

    fetched = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, home, *cli_, "fetch", "pec", "--source", zips, "--no-verify"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert (fetched.returncode, fetched.stdout) == (5, "")
    assert fetched.stderr == (
        f"error: CONVBANK_HOME {home} is not writable (Read-only file system: {home / 'locks'}); "
        "make it writable or point CONVBANK_HOME at a writable folder\n"
    )
    built = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, home, *cli_, "build", "casino", "--source", SHARED],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert (built.returncode, built.stdout, built.stderr.count("\n")) == (5, "", 1)
    assert built.stderr.startswith(
        f"error: CONVBANK_HOME {home} is not writable (Read-only file system: {home}"
    )
    assert built.stderr.endswith("); make it writable or point CONVBANK_HOME at a writable folder\n")
    assert list(home.iterdir()) == []  # the mount was private to the commands


# ---------------------------------------------------------------------- 9. SQL led by a dash
def test_sql_starting_with_a_dash_is_sql(built: Bank) -> None:
    result = run("query", "-- what is the answer?\nSELECT 42 AS x", "--format", "json")
    assert (result.exit_code, result.stdout) == (0, '[{"x":42}]\n')
    result = run("query", "--format=csv", "--a comment without a space\nSELECT 1 AS y, 2 AS z")
    assert (result.exit_code, result.stdout) == (0, "y,z\n1,2\n")
    result = run(
        "query",
        "--format",
        "json",
        "--engine",
        "duckdb",
        "-- c\nSELECT count(*) AS n FROM conversations WHERE dataset = 'casino'",
    )
    assert (result.exit_code, result.stdout) == (0, '[{"n":1030}]\n')
    result = run("query", "--", "-- after the end of options\nSELECT 3 AS w", "--format", "json")
    assert result.exit_code == 2  # after "--" everything is an argument, as usual
    typo = run("query", "--fromat", "json", "SELECT 1")
    assert typo.exit_code == 2 and "No such option '--fromat'" in typo.stderr


def test_sql_argument_rewrite_keeps_options_and_dash_alone() -> None:
    arity = {"--format": 1, "--engine": 1, "--master": 1, "-h": 0, "--help": 0}
    assert _sql_behind_dashes(["-- c\nSELECT 1", "--format", "json"], arity) == [
        "--format",
        "json",
        "--",
        "-- c\nSELECT 1",
    ]
    assert _sql_behind_dashes(["--format=csv", "-- c"], arity) == ["--format=csv", "--", "-- c"]
    for unchanged in (
        ["-"],
        ["SELECT 1", "--format", "json"],
        ["--format", "-- not sql", "SELECT 1"],
        ["--", "-x"],
    ):
        assert _sql_behind_dashes(unchanged, arity) == unchanged


# ---------------------------------------------------------------------- 9. --source folders
def test_missing_source_folder_is_a_warning_when_another_exists(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = run("fetch", "casino", "--source", missing, "--source", SHARED)
    assert result.exit_code == 0
    assert result.stderr == f"warning: source folder {missing} does not exist\n"
    assert result.stdout.splitlines()[0] == f"casino_train.json\t{SHARED / 'casino' / 'casino_train.json'}"


def test_all_source_folders_missing_is_an_error_with_exit_2(tmp_path: Path) -> None:
    one = run("fetch", "casino", "--source", tmp_path / "a")
    assert (one.exit_code, one.stdout) == (2, "")
    assert one.stderr == f"error: source folder {tmp_path / 'a'} does not exist; check the --source path\n"
    two = run("build", "casino", "--source", tmp_path / "a", "--source", tmp_path / "b")
    assert (two.exit_code, two.stdout) == (2, "")
    assert two.stderr == (
        f"error: none of the source folders exist: {tmp_path / 'a'}, {tmp_path / 'b'}; check the --source paths\n"
    )
    assert not (tmp_path / "home").exists()  # stopped before anything was written


def test_a_source_that_is_there_but_no_folder_is_an_error_with_exit_2(tmp_path: Path) -> None:
    """Before: a FIFO as ``--source`` passed click's check (it refuses only a regular file)
    and every file was said ``unreadable (Not a directory)``, exit 3 (2 of 2 runs)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for command in ("fetch", "build"):
        done = run(command, "casino", "--source", SHARED, "--source", fifo)
        assert (done.exit_code, done.stdout) == (2, "")
        assert done.stderr == f"error: source folder {fifo} is not a folder; check the --source path\n"


@pytest.mark.parametrize("args", [("build", "casino", "--source", str(SHARED), "--no-verify"), ("list",)])
def test_a_device_in_the_way_of_the_home_is_said_to_be_a_device(
    monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    """``CONVBANK_HOME=/dev/null/x`` names /dev/null as the device it is, as an export's
    output folder does (before: "/dev/null is a file, not a folder", 2 of 2 commands; found
    after pass 21's B fixed it for exports)."""
    monkeypatch.setenv("CONVBANK_HOME", "/dev/null/x")
    result = run(*args)
    assert (result.exit_code, result.stdout) == (5, "")
    assert result.stderr == (
        "error: CONVBANK_HOME /dev/null/x: /dev/null is a device, not a folder; move it away or point "
        "CONVBANK_HOME at a writable folder\n"
    )
