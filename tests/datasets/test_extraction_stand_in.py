"""A FIFO standing in place of an archive's extraction in the cache
(``extracted/<dataset>/<archive>/<sha256>``) is replaced by the extraction, never opened
(before: ``shutil.rmtree`` opened it, and ``fetch`` and ``build`` waited on it for ever,
killed at 10 s, 2 of 2 runs each)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from testsupport import ROOT, SHARED

SAMPLES = SHARED.parent / "samples"


def _fetch(home: Path, source: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "convbank", "fetch", "pec", "--source", str(source), "--no-verify"],
        env=env,
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )


def test_a_fifo_in_place_of_an_extraction_is_replaced_never_opened(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    with zipfile.ZipFile(source / "hf_pec.zip", "w") as archive:
        for path in sorted((SAMPLES / "pec" / "hf_pec").rglob("*")):
            archive.write(path, path.relative_to(SAMPLES / "pec"))
    home = tmp_path / "home"
    first = _fetch(home, source)
    assert first.returncode == 0, first.stderr
    extraction = Path(first.stdout.split("\t")[1].strip()).parent
    shutil.rmtree(extraction)
    os.mkfifo(extraction)
    again = _fetch(home, source)
    assert (again.returncode, again.stdout) == (0, first.stdout)
    assert (extraction / "hf_pec" / "happy" / "train.txt").is_file()
