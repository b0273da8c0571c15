"""A plugin is trusted code in convbank's process: one that ends the process itself
(``os._exit(0)`` inside ``read``) ends ``build`` with its own code and no word, which nothing in
the process can see (a documented limit: docs/guide/reliability.md). What holds is what holds
after ``kill -9``: nothing half-written is in the bank, the next ``doctor`` names the staging
left behind and ``doctor --clean`` removes it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from testsupport import PLUGINS, ROOT, convbank_with_plugins, plugin

_PLUGIN = """\
import os
from convbank_tsvdial import TsvDial

class ExitP(TsvDial):
    name = 'exitp'

    def read(self, paths, part):
        yield from super().read(paths, part)
        os._exit(0)
"""


def test_a_plugin_ending_the_process_leaves_what_a_kill_leaves(tmp_path: Path) -> None:
    plugin(tmp_path, "exitp", "[convbank.datasets]\nexitp = exitp:ExitP\n", exitp=_PLUGIN)
    home, path = tmp_path / "home", (PLUGINS, tmp_path)
    samples = PLUGINS / "convbank_tsvdial" / "samples"
    done = convbank_with_plugins(home, "build", "exitp", "--source", str(samples), path=path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # the limit: the plugin's exit, unsaid
    bank = home / "bank"
    assert not (bank / "manifest.json").exists() and sorted(p.name for p in bank.iterdir()) == [
        ".lock",
        ".staging",
    ]
    done = convbank_with_plugins(home, "doctor", path=path)
    assert (done.returncode, done.stdout + done.stderr) == (
        0,
        f"leftover: {bank / '.staging'} (removed by `convbank doctor --clean` or the next build)\n"
        f"bank at {bank}: 0 files, 0 bytes checked, sound\n",
    )
    done = convbank_with_plugins(home, "doctor", "--clean", path=path)
    assert done.returncode == 0 and sorted(p.name for p in bank.iterdir()) == [".lock"]


_LARGE = """\
from exitp import ExitP

class Large(ExitP):
    name = 'large'

    def split_bytes(self, paths, part):
        return 2**30  # read in the local engine's worker processes
"""


def test_a_plugin_ending_a_worker_process_fails_its_config_exit_1(tmp_path: Path) -> None:
    """The same exit inside a worker of the local engine (a config over 8 MiB, ``--workers``
    2) is seen: the config fails, naming the plugin and how the worker ended, exit 1, and
    nothing of it is in the bank (before: the same line without how the worker ended)."""
    entry_points = "[convbank.datasets]\nexitp = exitp:ExitP\nlarge = large:Large\n"
    plugin(tmp_path, "exitp", entry_points, exitp=_PLUGIN, large=_LARGE)
    home, samples = tmp_path / "home", PLUGINS / "convbank_tsvdial" / "samples"
    args = ("build", "large", "--workers", "2", "--source", str(samples))
    done = convbank_with_plugins(home, *args, path=(PLUGINS, tmp_path))
    origin = "entry point large = large:Large of group convbank.datasets (package exitp 1.0)"
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        1,
        f"error: the code of {origin} failed building large/default (RuntimeError: a worker process "
        "ended without answering, with exit code 0 (convbank.engines.local:_write_piece)); nothing "
        "of it was kept — report it to its authors (--debug shows the traceback)",
    )
    assert sorted(p.name for p in (home / "bank").iterdir()) == [".lock"]


_THREADED = """\
import threading, time
from convbank_tsvdial import TsvDial

class Threaded(TsvDial):
    name = 'threaded'

    def read(self, paths, part):
        threading.Thread(target=time.sleep, args=(120,)).start()
        yield from super().read(paths, part)
"""


def test_a_plugins_thread_left_running_never_holds_the_commands_exit(tmp_path: Path) -> None:
    """A thread a plugin starts and leaves running (no daemon) does not hold the process once
    the command is over: its exit code comes at once (before: ``build`` printed its table and
    then waited for the thread, SIGTERM and Ctrl-C ignored as the command was over, until
    killed, 2 of 2 runs)."""
    plugin(tmp_path, "threaded", "[convbank.datasets]\nthreaded = threaded:Threaded\n", threaded=_THREADED)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(PLUGINS), str(tmp_path)]),
        "CONVBANK_HOME": str(tmp_path / "home"),
        "CONVBANK_OFFLINE": "1",
    }
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "convbank",
            "build",
            "threaded",
            "--source",
            str(PLUGINS / "convbank_tsvdial" / "samples"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert time.monotonic() - began < 15
    assert done.returncode == 0, done.stderr
    assert "2 splits built in " in done.stderr
