"""A plugin's code that moves the working folder (``os.chdir``) or sets ``CONVBANK_HOME`` while
a build runs never moves what the build writes or names: the home, the bank and the source
folders are absolute paths from the start (:func:`convbank.settings.absolute`), and the
``bank at`` line names the bank the build opened (before: with ``CONVBANK_HOME=home``, the
build locked and staged in ``home/bank`` and committed the bank under the plugin's working
folder, its staging folder left behind; a relative ``--source`` was "not found"; a plugin
setting ``CONVBANK_HOME`` made ``bank at`` name its folder; 2 of 2 runs each)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testsupport import PLUGINS, ROOT, plugin

SAMPLES = PLUGINS / "convbank_tsvdial" / "samples"
PLUGIN = """\
import os
from convbank_tsvdial import TsvDial


class Moving(TsvDial):
    name = "moving"

    def {method}(self, *args):
        {act}
        return super().{method}(*args)
"""


def _build(work: Path, method: str, act: str, home: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``build moving ARGS`` run in ``work`` with ``CONVBANK_HOME=home``, the plugin's
    ``method`` doing ``act`` first."""
    site = plugin(
        work.parent / "site",
        "moving",
        "[convbank.datasets]\nmoving = moving:Moving\n",
        moving=PLUGIN.format(method=method, act=act),
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(PLUGINS), str(site)]),
        "CONVBANK_HOME": home,
        "CONVBANK_OFFLINE": "1",
        "COLUMNS": "200",
    }
    env.pop("CONVBANK_SOURCE", None)
    command = [sys.executable, "-m", "convbank", "build", "moving", *args]
    return subprocess.run(
        command, env=env, cwd=work, capture_output=True, text=True, timeout=120, check=False
    )


def _bank_at(done: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith("bank at "))


def test_a_plugin_moving_the_working_folder_never_moves_the_bank(tmp_path: Path) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    done = _build(work, "read", f"os.chdir({str(elsewhere)!r})", "home", "--source", str(SAMPLES))
    assert done.returncode == 0, done.stderr
    assert _bank_at(done) == f"bank at {work / 'home' / 'bank'}"
    assert list(elsewhere.iterdir()) == []
    bank = work / "home" / "bank"
    assert (bank / "manifest.json").is_file()
    assert not (bank / ".staging").exists()
    assert sorted(
        p.name for p in (bank / "conversations" / "dataset=moving" / "config=default").iterdir()
    ) == [
        "split=test",
        "split=train",
    ]


def test_a_relative_source_folder_is_found_after_a_plugin_moved_the_working_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    for sample in SAMPLES.iterdir():
        (work / "src" / sample.name).write_bytes(sample.read_bytes())
    done = _build(work, "files_for", "os.chdir('/')", str(tmp_path / "home"), "--source", "src")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("2 splits built in ")


def test_bank_at_names_the_bank_built_whatever_convbank_home_a_plugin_sets(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    other = tmp_path / "other"
    act = f"os.environ['CONVBANK_HOME'] = {str(other)!r}"
    done = _build(work, "read", act, str(tmp_path / "home"), "--source", str(SAMPLES))
    assert done.returncode == 0, done.stderr
    assert _bank_at(done) == f"bank at {tmp_path / 'home' / 'bank'}"
    assert (tmp_path / "home" / "bank" / "manifest.json").is_file()
    assert not other.exists()
