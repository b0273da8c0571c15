"""What stands at the bank's ``.staging`` that is no folder (a FIFO, a file) is no leftover of a
build: ``doctor`` does not list it as one and ``doctor --clean`` never opens it (before: a FIFO
made ``doctor --clean`` and ``build`` wait on it for ever, killed at 10 and 20 s, and a file was
listed as ``removed by convbank doctor --clean`` after every --clean, 2 of 2 runs each);
``build`` names it in one line, exit 5."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testsupport import ROOT, SHARED


def _convbank(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "convbank", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )


WHAT = {"fifo": "a FIFO (named pipe)", "file": "a file"}


@pytest.mark.parametrize("kind", list(WHAT))
def test_a_staging_that_is_no_folder_is_never_opened_or_claimed_removed(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    (home / "bank").mkdir(parents=True)
    staging = home / "bank" / ".staging"
    if kind == "fifo":
        os.mkfifo(staging)
    else:
        staging.write_text("x", encoding="utf-8")
    bank = home / "bank"
    for args in (["doctor", "--clean"], ["doctor"]):
        done = _convbank(home, *args)
        assert (done.returncode, done.stdout + done.stderr) == (
            0,
            f"bank at {bank}: 0 files, 0 bytes checked, sound\n",
        ), args
    done = _convbank(home, "build", "casino", "--source", str(SHARED / "casino"))
    assert (done.returncode, done.stderr) == (
        5,
        f"error: CONVBANK_HOME {home}: {staging} is {WHAT[kind]}, not a folder; move it away or point "
        "CONVBANK_HOME at a writable folder\n",
    )
    assert os.path.lexists(staging)
