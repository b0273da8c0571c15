"""What a model's code changes of the process is put back after each call into it, and what it
prints goes to stderr (pass 22): stdout holds ``bench --json``'s document alone, a model that
sets ``CONVBANK_HOME``, the umask, ``sys.stdout`` or the stopping signals' handlers never
changes where the run reads and saves, how its files are made, what it prints with, or
whether it can be stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.bench import run
from convbank.cli.main import cli
from convbank.store import Bank

PRINTER = """import os
print('{"forged": 0}')
class P:
    def __init__(self):
        print('{"forged": 0}')
    def predict(self, examples):
        print('{"forged": 1}')
        os.write(1, b'{"forged": 2}\\n')
        return [[] for _ in examples]
"""

THREADER = """import os, sys, threading, time
kept = sys.stdout
def chatter():
    while True:
        print('{"forged": 3}', flush=True)
        print('{"forged": 4}', file=kept, flush=True)
        os.write(1, b'{"forged": 5}\\n')
        time.sleep(0.005)
class T:
    started = False
    def predict(self, examples):
        if not T.started:
            T.started = True
            threading.Thread(target=chatter, daemon=True).start()
        return [[] for _ in examples]
"""

CHANGER = """import io, os, signal, sys
class C:
    def predict(self, examples):
        os.environ["CONVBANK_HOME"] = os.environ["ELSEWHERE"]
        os.environ.pop("CONVBANK_OFFLINE", None)
        os.environ["CONVBANK_NEW"] = "1"
        os.environ["MODELS_OWN"] = "kept"
        os.umask(0o777)
        sys.stdout = io.StringIO()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return [[] for _ in examples]
"""

DEAF = """import os, signal, time
class D:
    def fit(self, examples, gold):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    def predict(self, examples):
        open(os.environ["MARKER"], "w").close()
        time.sleep(20)
        return [[] for _ in examples]
"""


def test_what_a_model_prints_never_reaches_bench_jsons_stdout(built: Bank, tmp_path: Path) -> None:
    """Before: a model's ``print`` and writes to file descriptor 1 came out on stdout before
    ``bench --json``'s document, 10 forged lines, and 2 more from its module's import and its
    ``__init__``, the output no JSON (2 of 2 runs); now on stderr, stdout one JSON document."""
    (tmp_path / "printer.py").write_text(PRINTER, encoding="utf-8")
    args = [sys.executable, "-m", "convbank", "bench", "casino-strategy", "-m", "printer:P", "--json"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"] == "printer:P"
    assert done.stderr.count('{"forged": 1}') == 5 and done.stderr.count('{"forged": 2}') == 5
    assert done.stderr.count('{"forged": 0}') == 2  # at import and in the class's __init__


def test_what_a_model_changes_of_the_process_is_put_back(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a model setting ``CONVBANK_HOME`` made ``bench --save`` fail after every fold
    ("casino is not in the bank at .../elsewhere/bank", exit 4), one setting the umask to
    0o777 saved its run unreadable (mode 000, its folder too), one replacing ``sys.stdout``
    ended in a traceback (exit 1), 2 of 2 runs each; now each is put back after each call."""
    monkeypatch.setenv("ELSEWHERE", str(tmp_path / "elsewhere"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "changer.py").write_text(CHANGER, encoding="utf-8")
    home, mask = os.environ["CONVBANK_HOME"], os.umask(0o022)
    handler = signal.getsignal(signal.SIGTERM)
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "changer:C", "--save", "--json"])
    assert done.exit_code == 0, done.output
    saved = list((Path(home) / "bench" / "results").iterdir())
    assert len(saved) == 1 and saved[0].stat().st_mode & 0o777 == 0o644
    assert not (tmp_path / "elsewhere").exists()
    assert os.environ["CONVBANK_HOME"] == home and "CONVBANK_NEW" not in os.environ
    assert os.environ["MODELS_OWN"] == "kept"  # the model's own variables stay
    assert (os.umask(0o022), signal.getsignal(signal.SIGTERM)) == (0o022, handler)
    os.umask(mask)
    monkeypatch.delenv("MODELS_OWN")
    out = sys.stdout
    assert run("casino-strategy", model=__import__("changer").C()).metrics["mean_f1"] == 0.0
    assert sys.stdout is out and os.environ["CONVBANK_HOME"] == home


def test_a_model_that_ignores_sigterm_leaves_the_run_stoppable(built: Bank, tmp_path: Path) -> None:
    """Before: a model setting SIGTERM and SIGINT to be ignored in its ``fit`` made the rest of
    the run unstoppable: SIGTERM, then SIGINT during its next ``predict`` did nothing, the run
    went on to exit 0 (2 of 2 runs); now the handlers are put back after ``fit``, exit 143."""
    (tmp_path / "deaf.py").write_text(DEAF, encoding="utf-8")
    marker = tmp_path / "marker"
    env = {**os.environ, "MARKER": str(marker)}
    args = [sys.executable, "-m", "convbank", "bench", "casino-strategy", "-m", "deaf:D"]
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and time.monotonic() - start < 10
    assert err.splitlines()[-1] == "terminated (SIGTERM): stopped; nothing half-written was kept"


def test_what_a_models_thread_prints_after_its_call_never_reaches_bench_jsons_stdout(
    built: Bank, tmp_path: Path
) -> None:
    """A thread the model starts prints on, between its calls and while the result is
    written (``print``, a ``sys.stdout`` it kept, file descriptor 1): all of it goes to stderr,
    stdout is ``bench --json``'s document alone (before: the lines printed outside the model's
    calls came out on stdout, 4 of 5 in pass 22's run, the output no JSON)."""
    (tmp_path / "threader.py").write_text(THREADER, encoding="utf-8")
    args = [sys.executable, "-m", "convbank", "bench", "casino-strategy", "-m", "threader:T", "--json"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["model"] == "threader:T" and "forged" not in done.stdout
    assert all(done.stderr.count(f'{{"forged": {n}}}') > 10 for n in (3, 4, 5))
