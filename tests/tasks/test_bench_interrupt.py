"""Issue 34.3: ``bench`` says up front how long a slow default takes and what is quicker, its
bars estimate the time left from the first fold, and Ctrl-C stops it with the folds done so
far reported as a partial result (marked, not saved; exit 130)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import convbank.bench
from convbank.bench import BenchError, Interrupted, run, save, task_named
from convbank.cli import cli
from convbank.query import load
from convbank.store import Bank

SRC = Path(__file__).resolve().parents[2] / "src"
NOTE = (
    "casino-strategy: its default model finetune takes about 26 minutes of CPU on the real data "
    "(measured here; longer on a loaded machine); quicker: --model tfidf (4 s), --model embed ({embed}); "
    "Ctrl-C stops it with the folds done so far"
)
STOPPER = """
import os, time
from pathlib import Path


class {name}:
    '''Predicts small-talk everywhere; the fit of fold {at} {what}.'''

    def __init__(self):
        self.fits = 0

    def fit(self, examples, gold):
        self.fits += 1
        if self.fits == {at}:
            {action}

    def predict(self, examples):
        return [["small-talk"] for _ in examples]
"""


def _model(folder: Path, module: str, at: int, action: str) -> str:
    what = "waits for Ctrl-C" if "sleep" in action else "is Ctrl-C"
    (folder / f"{module}.py").write_text(STOPPER.format(name="Stopper", at=at, what=what, action=action))
    return f"{module}:Stopper"


def _partial_metrics(folds: list[str]) -> dict[str, object]:
    """The task's own score of the small-talk predictions on those folds only."""
    task = task_named("casino-strategy")
    data = task.data(load("casino"))
    part = replace(data, folds=[f for f in data.folds if f.name in folds])
    guesses = {data.examples[i].id: ["small-talk"] for f in part.folds for i in f.test}
    return task.score(part, guesses)


def test_the_slow_default_is_said_up_front(casino_home: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    task = task_named("casino-strategy")
    embed = f"{task.cpu_seconds['embed'] / 60:.0f} minutes"
    assert task.time_note("finetune") == NOTE.format(embed=embed)
    assert task.time_note("embed") == (
        f"casino-strategy: the model embed takes about {embed} of CPU on the real data (measured here; "
        "longer on a loaded machine); quicker: --model tfidf (4 s); Ctrl-C stops it with the folds done so far"
    )
    assert task.time_note("tfidf") is None and task.time_note("random") is None

    def stopped(*args: object, **kwargs: object) -> None:  # the run itself would take 26 minutes
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(convbank.bench, "run", stopped)
        result = CliRunner().invoke(cli, ["bench", "casino-strategy"])
    assert result.exit_code == 130
    assert result.stderr.splitlines() == [
        NOTE.format(embed=embed),
        "interrupted (Ctrl-C): stopped; nothing half-written was kept",
    ]
    quick = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "tfidf"])
    assert quick.exit_code == 0 and "takes about" not in quick.stderr


def test_sigint_after_the_first_fold_reports_it_as_a_partial_run(casino_home: Bank, tmp_path: Path) -> None:
    marker = tmp_path / "fold2-started"
    spec = _model(tmp_path, "stop_at_fold2", 2, f"Path({str(marker)!r}).touch(); time.sleep(300)")
    env = {**os.environ, "PYTHONPATH": str(SRC), "CONVBANK_HOME": str(casino_home.root.parent)}
    args = [sys.executable, "-m", "convbank", "bench", "casino-strategy", "-m", spec, "--json", "--save"]
    with subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + 120
        while not marker.exists():  # fold 1 is done when fold 2's fit starts
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "fold 2 never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    report = json.loads(stdout)
    assert report["partial"] == {"folds_done": ["fold1"], "folds": 5}
    assert report["metrics"] == _partial_metrics(["fold1"])
    assert report["model"] == spec
    assert stderr.splitlines()[-1] == (
        "interrupted (Ctrl-C): a partial result of 1 of 5 folds (fold1); not saved, no predictions written"
    )
    assert not (casino_home.root.parent / "bench" / "results").exists()  # --save saved nothing


def test_the_partial_report_is_marked(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = _model(tmp_path, "stop_at_fold3", 3, "raise KeyboardInterrupt")
    result = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", spec])
    assert result.exit_code == 130
    assert result.stdout.splitlines()[2] == (
        "PARTIAL RESULT: stopped by Ctrl-C after 2 of 5 folds (fold1, fold2); the metrics are those "
        "folds' only, not the protocol's."
    )
    mean = _partial_metrics(["fold1", "fold2"])["mean_f1"]
    assert f"│ mean_f1                 │ {mean:.4f} │" in result.stdout
    assert result.stderr.splitlines()[-1] == (
        "interrupted (Ctrl-C): a partial result of 2 of 5 folds (fold1, fold2); not saved, no predictions written"
    )
    early = CliRunner().invoke(
        cli,
        ["bench", "casino-strategy", "-m", _model(tmp_path, "stop_at_fold1", 1, "raise KeyboardInterrupt")],
    )
    assert early.exit_code == 130 and early.stdout == ""  # no fold done: no result at all
    assert early.stderr.splitlines()[-1] == "interrupted (Ctrl-C): stopped; nothing half-written was kept"


def test_the_api_raises_interrupted_with_the_partial_result(casino_home: Bank, tmp_path: Path) -> None:
    class Stopper:
        def __init__(self) -> None:
            self.fits = 0

        def fit(self, examples: object, gold: object) -> None:
            self.fits += 1
            if self.fits == 2:
                raise KeyboardInterrupt

        def predict(self, examples: list[object]) -> list[list[str]]:
            return [["small-talk"] for _ in examples]

    with pytest.raises(Interrupted) as info:
        run("casino-strategy", model=Stopper())
    partial = info.value.result
    assert partial is not None and partial.partial and partial.folds_done == ["fold1"] and partial.folds == 5
    assert partial.metrics == _partial_metrics(["fold1"])
    assert isinstance(info.value, KeyboardInterrupt)
    with pytest.raises(BenchError) as refused:
        save(partial, load("casino"))
    assert str(refused.value) == (
        "casino-strategy: a partial run (1 of 5 folds, stopped by Ctrl-C) is not saved; run it to the end to save it"
    )


@pytest.mark.parametrize(
    ("completed", "elapsed", "shown"),
    [(0, 12.0, "left: after the first step"), (1, 60.0, "about 4:00 left"), (4, 130.0, "about 0:32 left")],
)
def test_the_bars_estimate_the_time_left_from_the_steps_done(
    completed: int, elapsed: float, shown: str
) -> None:
    from convbank.cli.bench import _TimeLeft

    task = SimpleNamespace(total=5, completed=completed, elapsed=elapsed)
    assert _TimeLeft().render(task).plain == shown


@pytest.mark.parametrize(
    ("signum", "code", "said"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGHUP, 129, "SIGHUP")]
)
def test_sigterm_and_sighup_are_said_as_themselves_with_their_exit_codes(
    casino_home: Bank, tmp_path: Path, signum: int, code: int, said: str
) -> None:
    """Sixth round. Before: SIGTERM or SIGHUP during a run's folds was reported as Ctrl-C,
    `interrupted (Ctrl-C): a partial result ...`, exit 130 (and with no fold done, `interrupted
    (Ctrl-C): stopped`, exit 130), where every other command says the signal, exit 143 or 129."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "CONVBANK_HOME": str(casino_home.root.parent)}
    for at, last in (
        (2, "a partial result of 1 of 5 folds (fold1); not saved, no predictions written"),
        (1, "stopped; nothing half-written was kept"),
    ):
        marker = tmp_path / f"fold{at}-started"
        spec = _model(tmp_path, f"wait_at_fold{at}", at, f"Path({str(marker)!r}).touch(); time.sleep(300)")
        args = [sys.executable, "-m", "convbank", "bench", "casino-strategy", "-m", spec, "--save"]
        with subprocess.Popen(
            args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as proc:
            deadline = time.monotonic() + 120
            while not marker.exists():
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, f"fold {at} never started"
                time.sleep(0.05)
            proc.send_signal(signum)
            stdout, stderr = proc.communicate(timeout=120)
        assert (proc.returncode, stderr.splitlines()[-1]) == (code, f"terminated ({said}): {last}")
        headers = [line for line in stdout.splitlines() if line.startswith("PARTIAL RESULT")]
        assert headers == (  # seventh round: the header on stdout said "stopped by Ctrl-C"
            [
                f"PARTIAL RESULT: stopped by {said} after 1 of 5 folds (fold1); the metrics are those folds' "
                "only, not the protocol's."
            ]
            if at == 2
            else []
        )
    assert not (casino_home.root.parent / "bench" / "results").exists()
