"""Saved runs that last: six saves at once keep six whole files, a file in the results folder
that is not a saved run is one warning (the others still listed), a metric that overflows is
saved as null with a note (never ``Infinity``), a full disk is exit 1; and an export of a run
of several configs, whose fold names hold a ``/``."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import convbank
from convbank.bench import leaderboard, run, save
from convbank.bench import results as results_module
from convbank.cli.main import cli
from convbank.store import Bank
from testsupport import mounted_tmpfs


def _strict(path: Path) -> Any:
    """A saved file as strict JSON: NaN or Infinity in it fail."""

    def refuse(token: str) -> None:
        raise AssertionError(f"{path.name} holds {token}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def test_six_saves_at_once_keep_six_whole_files(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six saves of one task, model and seed in the same second (the stamp held fixed), 20
    rounds, each save starting after a seeded jitter: six files every time, each whole."""
    corpus = convbank.load("casino")
    result = run("casino-strategy", model="random", load=lambda *a: corpus)
    monkeypatch.setattr(results_module.time, "strftime", lambda *a: "20260101T000000")
    monkeypatch.setattr(os, "fsync", lambda fd: time.sleep(0.002))  # a disk's latency, not a shared disk's
    for round_ in range(20):
        folder = tmp_path / f"round{round_}"
        monkeypatch.setattr(results_module, "results_folder", lambda folder=folder: folder)
        jitter = random.Random(round_)
        delays = [jitter.uniform(0, 0.004) for _ in range(6)]
        barrier = threading.Barrier(6)
        saved: list[Path] = []
        failures: list[BaseException] = []

        def one(k: int, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            time.sleep(delays[k])  # noqa: B023 - each round's own delays
            try:
                saved.append(save(dataclasses.replace(result, seconds=float(k)), corpus))  # noqa: B023
            except BaseException as exc:
                failures.append(exc)  # noqa: B023

        threads = [threading.Thread(target=one, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures, failures
        files = sorted(folder.glob("*.json"))
        assert [f.name for f in files] == sorted(
            ["20260101T000000-casino-strategy-random-seed0.json"]
            + [f"20260101T000000-casino-strategy-random-seed0-{n}.json" for n in range(2, 7)]
        ), round_
        assert sorted(saved) == files and not list(folder.glob(".*"))  # no temporary file left
        records = [_strict(f) for f in files]  # each whole
        assert sorted(r["seconds"] for r in records) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], round_
        assert all(r["metrics"] == result.metrics for r in records)


BAD_FILES: dict[str, tuple[bytes, str]] = {
    "empty-object": (b"{}", "Object missing required field `task`"),
    "a-list": (b"[]", "Expected `object`, got `array`"),
    "null": (b"null", "Expected `object`, got `null`"),
    "metrics-a-list": (
        b'{"task": "casino-strategy", "model": "x", "seed": 0, "metrics": [1]}',
        "Expected `object`, got `array` - at `$.metrics`",
    ),
    "metric-a-string": (
        b'{"task": "casino-strategy", "model": "x", "seed": 0, "metrics": {"mean_f1": "0.5"}}',
        "Expected `float | object | null`, got `str` - at `$.metrics[...]`",
    ),
    "seed-a-string": (
        b'{"task": "casino-strategy", "model": "x", "seed": "0", "metrics": {}}',
        "Expected `int`, got `str` - at `$.seed`",
    ),
    "truncated": (b'{"task": "casino-strategy", "model": "x", "se', "Input data was truncated"),
    "empty": (b"", "Input data was truncated"),
    "nan": (
        b'{"task": "casino-strategy", "model": "x", "seed": 0, "metrics": {"mean_f1": NaN}}',
        "NaN at byte 76 is not a JSON number",
    ),
    "infinity": (
        b'{"task": "convai2-quality", "model": "x", "seed": 0, "metrics": {"mae": Infinity}}',
        "Infinity at byte 72 is not a JSON number",
    ),
    "out-of-range": (
        b'{"task": "convai2-quality", "model": "x", "seed": 0, "metrics": {"mae": 1e400}}',
        "Number out of range - at `$.metrics[...]`",
    ),
    "not-utf8": (
        b'{"task": "\xff\xfe", "model": "x", "seed": 0, "metrics": {}}',
        "Invalid UTF-8 encoded string",
    ),
    # before: listed with {'x': 0.5} as its score (2 of 2 files)
    "headline-not-a-number": (
        b'{"task": "casino-strategy", "model": "x", "seed": 0, "metrics": {"mean_f1": {"x": 0.5}}}',
        "its mean_f1 is not a number",
    ),
    "config-headline-not-a-number": (
        b'{"task": "convai2-quality", "model": "x", "seed": 0, "metrics": {"a": {"spearman": {"x": 1}}}}',
        "its spearman is not a number",
    ),
    # before: a RecursionError traceback from the decoder, exit 1, no run listed
    "deep-extra-field": (
        b'{"task": "casino-strategy", "model": "x", "seed": 0, "metrics": {}, "extra": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        "nested more than 64 deep",
    ),
}


def test_a_file_that_is_not_a_saved_run_is_one_warning_and_the_others_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    monkeypatch.setattr(results_module, "results_folder", lambda: folder)
    good = {"task": "casino-strategy", "seed": 0, "metrics": {"mean_f1": 0.5, "per_label": {"uv-part": 0.1}}}
    (folder / "a-good.json").write_text(json.dumps({**good, "model": "tfidf"}))
    (folder / "z-good.json").write_text(json.dumps({**good, "model": "old", "metrics": {"mean_f1": 0.25}}))
    for name, (data, _) in BAD_FILES.items():
        (folder / f"bad-{name}.json").write_bytes(data)
    with pytest.warns(UserWarning) as caught:
        rows = leaderboard()
    assert [r["model"] for r in rows] == ["tfidf", "old"]
    assert sorted(str(w.message) for w in caught) == sorted(
        f"skipped {folder / f'bad-{name}.json'}: not a saved run ({why})"
        for name, (_, why) in BAD_FILES.items()
    )
    assert len(BAD_FILES) == 15
    listed = CliRunner().invoke(cli, ["bench", "--results"])
    assert listed.exit_code == 0, listed.output
    warned = [line for line in listed.stderr.splitlines() if line.startswith("warning: skipped ")]
    assert len(warned) == len(BAD_FILES) and listed.stderr.count("\n") == len(BAD_FILES)
    assert "tfidf" in listed.stdout and "old" in listed.stdout and "Traceback" not in listed.output
    as_json = CliRunner().invoke(cli, ["bench", "--results", "--json"])
    assert [r["model"] for r in json.loads(as_json.stdout)] == ["tfidf", "old"]


def test_a_fifo_a_device_or_a_huge_file_in_the_results_is_one_warning_never_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Third round. Before: a FIFO named ``*.json`` in the results folder made ``bench
    --results`` wait for ever (killed after 10 s); a link to ``/dev/zero`` or a 3 GiB sparse
    file was read whole (a ``MemoryError`` traceback under a 2 GB address-space limit, else
    memory without end). Now each is one warning naming it, at once, in bounded memory, and
    the saved runs are listed; a folder with a ``.json`` name and a link loop as before."""
    import subprocess
    import sys

    home = tmp_path / "home"
    folder = home / "bench" / "results"
    folder.mkdir(parents=True)
    good = {"task": "casino-strategy", "model": "tfidf", "seed": 0, "metrics": {"mean_f1": 0.5}}
    (folder / "a-good.json").write_text(json.dumps(good))
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    with open(folder / "huge.json", "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk used
    (folder / "dir.json").mkdir()
    (folder / "loop.json").symlink_to("loop.json")
    env = {**os.environ, "CONVBANK_HOME": str(home)}
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, runpy, sys; "
            "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "sys.argv = ['convbank', 'bench', '--results', '--json']; runpy.run_module('convbank', run_name='__main__')",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )
    assert time.monotonic() - started < 20
    assert done.returncode == 0, done.stderr
    assert [r["model"] for r in json.loads(done.stdout)] == ["tfidf"]
    assert sorted(done.stderr.splitlines()) == [
        f"warning: skipped {folder / 'dir.json'}: cannot be read (a folder, not a regular file)",
        f"warning: skipped {folder / 'fifo.json'}: cannot be read (a FIFO (named pipe), not a regular file)",
        f"warning: skipped {folder / 'huge.json'}: cannot be read (larger than 16,777,216 bytes)",
        f"warning: skipped {folder / 'loop.json'}: cannot be read (Too many levels of symbolic links)",
        f"warning: skipped {folder / 'zero.json'}: cannot be read (a device, not a regular file)",
    ]


def test_a_metric_that_overflows_is_saved_as_null_with_a_note(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Predictions of 1e308 make MAE overflow to Infinity: reported and saved as null, a note
    on stderr and in the file, the run listed (before: ``"mae": Infinity`` and never listed)."""
    folder = tmp_path / "results"
    monkeypatch.setattr(results_module, "results_folder", lambda: folder)
    data = convbank.bench.task_named("convai2-quality").data(convbank.load("convai2", "volunteers"))
    huge = tmp_path / "huge.jsonl"
    huge.write_text(
        "".join(json.dumps({"example_id": i, "prediction": 1e308}) + "\n" for i in data.test_ids())
    )
    runner = CliRunner()
    args = ["bench", "convai2-quality", "--config", "volunteers", "--predictions", str(huge)]
    done = runner.invoke(cli, [*args, "--save", "--json"])
    assert done.exit_code == 0, done.output
    note = "metrics.mae was inf (not a finite number): reported and saved as null"
    assert done.stderr.splitlines()[0] == f"note: {note}"
    shown = json.loads(done.stdout)
    assert shown["metrics"] == {"spearman": None, "mae": None} and shown["notes"] == [note]
    (file,) = folder.glob("*.json")
    assert _strict(file)["metrics"] == {"spearman": None, "mae": None} and _strict(file)["notes"] == [note]
    assert [(r["model"], r["score"]) for r in leaderboard("convai2-quality")] == [("huge.jsonl", None)]
    table = runner.invoke(cli, ["bench", "--results"])
    assert table.exit_code == 0 and "huge.jsonl" in table.stdout and table.stderr == ""


def test_save_never_writes_a_non_finite_number(casino_home: Bank) -> None:
    corpus = convbank.load("casino")
    result = run("casino-strategy", model="random", load=lambda *a: corpus)
    result.metrics = {"mean_f1": float("nan"), "per_label": {"uv-part": float("-inf"), "no-need": 0.5}}
    saved = _strict(save(result, corpus))
    assert saved["metrics"] == {"mean_f1": None, "per_label": {"uv-part": None, "no-need": 0.5}}
    assert saved["notes"] == [
        "metrics.mean_f1 was nan (not a finite number): reported and saved as null",
        "metrics.per_label.uv-part was -inf (not a finite number): reported and saved as null",
    ]


def test_a_full_disk_while_saving_is_exit_1(casino_home: Bank, tmp_path: Path) -> None:
    """``bench --save`` on a full filesystem (a real 64 KiB tmpfs, filled): one line, exit 1
    as for every full disk (before: exit 2); nothing left in the folder."""
    with mounted_tmpfs(tmp_path / "bench", "64k") as mounted:
        fd = os.open(mounted / "filler", os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError, match="No space left"):
            while True:
                os.write(fd, b"x" * 4096)
        os.close(fd)
        done = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "random", "--save"])
        assert done.exit_code == 1, done.output
        last = done.stderr.splitlines()[-1]
        assert last.startswith(
            f"error: CONVBANK_HOME {tmp_path}: no space left writing {mounted / 'results'}"
        )
        assert last.endswith("; free some space or point CONVBANK_HOME at a writable folder")
        assert sorted(p.name for p in mounted.rglob("*")) == ["filler", "results"]


def test_an_export_of_several_configs_names_its_folds_as_files(built: Bank, tmp_path: Path) -> None:
    """``convai2-quality`` on volunteers and intermediate has folds ``volunteers/fold1``...:
    exported as ``volunteers-fold1/`` (before: exit 1, "No such file or directory")."""
    out = tmp_path / "out"
    done = CliRunner().invoke(cli, ["bench", "convai2-quality", "--export", str(out)])
    assert done.exit_code == 0, done.output
    assert done.output == f"81 files in {out / 'convai2-quality'}\n"  # 10 folds of 8, and task.json
    folder = out / "convai2-quality"
    described = json.loads((folder / "task.json").read_text())
    folds = [(f["name"], f["folder"]) for f in described["folds"]]
    assert folds == [
        (f"{c}/fold{n}", f"{c}-fold{n}") for c in ("intermediate", "volunteers") for n in range(1, 6)
    ]
    assert sorted(p.name for p in folder.iterdir()) == sorted(["task.json", *(f for _, f in folds)])
    tested = sum(len((folder / f / "test.jsonl").read_text().splitlines()) for _, f in folds)
    assert tested == sum(f["test"] for f in described["folds"]) == 593 + 198


@pytest.mark.parametrize(
    ("blocker", "said"),
    [
        ("bench", "is a file, not a folder"),
        ("bench/results", "is a file, not a folder"),
        ("bench/results", "is a link to {home}/nowhere, which does not exist"),
    ],
)
def test_a_file_in_the_place_of_the_results_folder_is_said_as_save_says_it(
    casino_home: Bank, blocker: str, said: str
) -> None:
    """Seventh round. Before: with ``$CONVBANK_HOME/bench`` a regular file (or
    ``bench/results`` one, or a dangling link), ``bench --results`` printed ``no saved runs in
    .../bench/results``, exit 0, while ``--save`` named the file, exit 5 (the dangling link as
    ``File exists``)."""
    home = casino_home.root.parent
    (home / blocker).parent.mkdir(parents=True, exist_ok=True)
    if "link" in said:
        (home / blocker).symlink_to(home / "nowhere")
    else:
        (home / blocker).write_text("not a folder")
    line = (
        f"error: CONVBANK_HOME {home}: {home / blocker} {said.format(home=home)}; move it away or "
        "point CONVBANK_HOME at a writable folder"
    )
    for args in (["--results"], ["--results", "--json"], ["casino-strategy", "-m", "random", "--save"]):
        result = CliRunner().invoke(cli, ["bench", *args])
        assert (result.exit_code, result.stderr.splitlines()[-1]) == (5, line), args
        assert "no saved runs" not in result.stdout


def test_a_saved_run_whose_name_is_not_utf8_is_listed_in_json(tmp_path: Path) -> None:
    """Before: a saved run copied into the results folder under a name that is not UTF-8
    (``\\xff\\xfe-run.json``, decoded by Python as ``\\udcff\\udcfe``) made ``bench --results
    --json`` a ``UnicodeEncodeError`` traceback, exit 1. Now its ``file`` is written with
    JSON escapes (``"\\udcff\\udcfe-run.json"``), which read back as the name Python gives it."""
    import subprocess
    import sys

    home = tmp_path / "home"
    folder = home / "bench" / "results"
    folder.mkdir(parents=True)
    good = {"task": "casino-strategy", "model": "tfidf", "seed": 0, "metrics": {"mean_f1": 0.5}}
    (folder / os.fsdecode(b"\xff\xfe-run.json")).write_text(json.dumps(good))
    (folder / os.fsdecode(b"\xfd-bad.json")).write_text("{}")
    env = {**os.environ, "CONVBANK_HOME": str(home)}
    command = [sys.executable, "-m", "convbank", "bench", "--results", "--json"]
    done = subprocess.run(command, capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.count(b"\n") == 1 and b'"file":"\\udcff\\udcfe-run.json"' in done.stdout
    rows = json.loads(done.stdout)
    assert [(r["model"], r["file"]) for r in rows] == [("tfidf", os.fsdecode(b"\xff\xfe-run.json"))]
    assert done.stderr.count(b"\n") == 1 and done.stderr.startswith(b"warning: skipped ")


def test_a_run_named_after_a_file_whose_name_is_not_utf8_is_saved(casino_home: Bank, tmp_path: Path) -> None:
    """Before: ``bench --predictions p\\xff.jsonl --save`` (a run named after its file) and
    ``--name $'n\\xfe'`` were a ``UnicodeEncodeError`` traceback from ``save()``, exit 1.
    A run's name is text: each byte that is not UTF-8 is U+FFFD, shown and saved alike."""
    from convbank.bench import task_named

    data = task_named("casino-strategy").data(convbank.load("casino"))
    path = tmp_path / os.fsdecode(b"p\xff.jsonl")
    path.write_text("".join(json.dumps({"example_id": i, "prediction": []}) + "\n" for i in data.test_ids()))
    named = CliRunner().invoke(
        cli, ["bench", "casino-strategy", "--predictions", str(path), "--save", "--json"]
    )
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["model"] == "p\ufffd.jsonl"
    given = CliRunner().invoke(
        cli,
        ["bench", "casino-strategy", "--predictions", str(path), "--name", os.fsdecode(b"n\xfe"), "--save"],
    )
    assert given.exit_code == 0, given.output
    assert sorted(r["model"] for r in leaderboard()) == ["n\ufffd", "p\ufffd.jsonl"]
    scored = run("casino-strategy", model="random")
    scored.model = "\ud800 and \udcff"  # from Python, any str
    assert _strict(save(scored, convbank.load("casino")))["model"] == "\ufffd and \ufffd"


def test_a_run_whose_name_or_seed_is_long_is_saved(casino_home: Bank) -> None:
    """Twelfth pass. Before: a run named with 60 letters of four bytes each (U+1D538, Deseret
    U+10400), or of seed ``10**250``, made a file name over the 255 bytes the system takes:
    ``error: CONVBANK_HOME ...: File name too long: .../.saved-run....tmp``, exit 5, nothing
    saved, the home blamed. Now the file name is cut to fit, and the file says them whole."""
    corpus = convbank.load("casino")
    scored = run("casino-strategy", model="random", load=lambda *a: corpus)
    for name in ("\U0001d538" * 60, "\U00010400" * 60, "a" * 300):
        scored.model = name
        path = save(scored, corpus)
        assert len(path.name.encode()) <= 255 and _strict(path)["model"] == name
    big = run("casino-strategy", model="random", seed=10**250, load=lambda *a: corpus)
    path = save(big, corpus)
    assert _strict(path)["seed"] == 10**250
    result = CliRunner().invoke(
        cli, ["bench", "casino-strategy", "-m", "random", "--name", "\U0001d538" * 60, "--save"]
    )
    assert result.exit_code == 0, result.output
    assert sorted(r["model"] for r in leaderboard()).count("\U0001d538" * 60) == 2
    assert len(leaderboard()) == 5


def test_a_saved_runs_huge_or_multi_line_text_is_one_short_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelfth pass. Before: a saved run (a file of the results folder) whose model is 10 MB
    of text made every row of ``bench --results`` as wide as it (1.77 MB printed for 20
    runs), and a task holding a newline split its row in two. Now each cell is one line of
    at most 120 characters, then the text's length; ``--json`` gives the text whole."""
    folder = tmp_path / "results"
    folder.mkdir()
    monkeypatch.setattr(results_module, "results_folder", lambda: folder)
    good = {"task": "casino-strategy", "seed": 0, "metrics": {"mean_f1": 0.5}}
    (folder / "a.json").write_text(json.dumps({**good, "model": "M" * 10_000_000}))
    (folder / "b.json").write_text(json.dumps({**good, "model": "tfidf", "task": "casino-strategy\nx"}))
    listed = CliRunner().invoke(cli, ["bench", "--results"])
    assert listed.exit_code == 0, listed.output
    assert len(listed.stdout) < 10_000 and "… (10,000,000 characters)" in listed.stdout
    rows = [line for line in listed.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and any("casino-strategy\\nx" in row for row in rows)
    as_json = CliRunner().invoke(cli, ["bench", "--results", "--json"])
    assert sorted(len(r["model"]) for r in json.loads(as_json.stdout)) == [5, 10_000_000]


_SAVE_THEN_HANG = """
import os, sys, time
import convbank
from convbank.bench import run, save
corpus = convbank.load("casino")
result = run("casino-strategy", model="random", seed=int(sys.argv[2]), load=lambda *a: corpus)
def hang(fd):
    open(sys.argv[1], "w").close()
    time.sleep(60)
os.fsync = hang
save(result, corpus)
"""


def test_a_save_killed_while_writing_leaves_nothing_after_the_next_save(
    casino_home: Bank, tmp_path: Path
) -> None:
    """Before: a save killed (``kill -9``) while it wrote its file left
    ``.<stamp>-<task>-<model>-seed<n>.<pid>.<random>.tmp`` for good (2 of 2 kills), since
    only a save of the same run in the same second looked for it. Every save's temporary
    file is now named alike, so the next save, of any run, removes a killed one's."""
    import signal
    import subprocess
    import sys

    folder = casino_home.root.parent / "bench" / "results"
    for seed in (1, 2):
        ready = tmp_path / f"ready{seed}"
        child = subprocess.Popen([sys.executable, "-c", _SAVE_THEN_HANG, str(ready), str(seed)])
        deadline = time.monotonic() + 60
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert [n for n in os.listdir(folder) if n.endswith(".tmp")] != []
    saved = save(run("casino-strategy", model="random", seed=3), convbank.load("casino"))
    assert sorted(os.listdir(folder)) == [saved.name]


def test_the_task_export_of_another_config_is_another_export(built: Bank, tmp_path: Path) -> None:
    """Before: ``--config intermediate --export DIR`` replaced the ``volunteers`` export there
    without a word, exit 0, the record unchanged (``parts: ["seed 0"]``), 2 of 2 runs: an
    export's record said the seed only, not what the task's data was of."""
    out = tmp_path / "out"

    def export(config: str, *more: str) -> tuple[int, str]:
        done = CliRunner().invoke(
            cli, ["bench", "convai2-quality", "-c", config, "--export", str(out), *more]
        )
        return done.exit_code, done.output

    def dialogues() -> int:
        described = json.loads((out / "convai2-quality" / "task.json").read_text(encoding="utf-8"))
        return int(described["details"]["dialogues"])

    assert export("volunteers") == (0, f"41 files in {out / 'convai2-quality'}\n")
    assert export("volunteers")[0] == 0  # the same export again replaces its own files
    code, said = export("intermediate")
    assert code == 2 and dialogues() == 593
    assert said.startswith(
        f"error: {out / 'convai2-quality'} holds the bench task convai2-quality export of convai2 "
        "(seed 0, 593 examples "
    ), said
    assert "; the bench task convai2-quality export of convai2 (seed 0, 198 examples " in said
    assert export("intermediate", "--overwrite")[0] == 0 and dialogues() == 198
    record = json.loads((out / ".convbank-exports.json").read_text(encoding="utf-8"))
    assert record["exports"]["convai2-quality"]["parts"][1].startswith("198 examples ")


def test_a_results_folder_where_no_file_can_be_made_is_named_itself(
    casino_home: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 19. Before: ``bench --save`` into a results folder in which no file can be made
    (``chattr +i``; ``chmod a-w`` for another user than root) said ``(Operation not
    permitted: .../bench/results/saved-run)``, a file no one saw and never there (2 of 2
    tries). Now the folder, exit 5."""
    import errno

    def refused(path: Path) -> tuple[int, str]:  # as _atomic.temporary_beside says mkstemp's error
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(results_module, "temporary_beside", refused)
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "random", "--save"])
    assert (done.exit_code, done.stderr.splitlines()[-1]) == (
        5,
        f"error: CONVBANK_HOME {tmp_path} is not writable (Permission denied: {tmp_path / 'bench' / 'results'}); "
        "make it writable or point CONVBANK_HOME at a writable folder",
    )
