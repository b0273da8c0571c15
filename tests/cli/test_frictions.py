"""Issue 34.2: what is printed for copying never wraps; a predictions run takes a name; every
lookup of a name suggests the closest; every public submodule is an attribute of convbank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from convbank import catalog, registry
from convbank.cli import cli
from convbank.corpus._filters import unknown_label
from convbank.errors import BenchError, ConvbankError, ExportError, UnknownDatasetError, did_you_mean
from convbank.store import Bank
from testsupport import SHARED
from testsupport import probe as run_probe

SRC = Path(__file__).resolve().parents[2] / "src"
DATASETS = "casino, ccpe, curiosity, pec, convai2, tsvdial"


# ---------------------------------------------------------------------- nothing wraps
def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess, stdout and stderr pipes (rich sees no terminal)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env |= {"PYTHONPATH": str(SRC), "CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "convbank", *args], capture_output=True, text=True, env=env, check=False
    )


def test_paths_printed_for_copying_never_wrap_in_a_pipe(tmp_path: Path) -> None:
    home = tmp_path / ("a-long-folder-name-" * 8) / "home"  # 160 characters and more
    assert len(str(home)) > 160
    built = _cli(home, "build", "casino", "--source", str(SHARED))
    assert built.returncode == 0, built.stderr
    assert built.stdout.splitlines()[0] == f"bank at {home / 'bank'}"
    empty = _cli(home, "bench", "--results")
    assert empty.stdout == f"no saved runs in {home / 'bench' / 'results'}; run convbank bench TASK --save\n"
    saved = _cli(home, "bench", "casino-strategy", "-m", "random", "--save")
    assert saved.returncode == 0, saved.stderr
    (line,) = [x for x in saved.stderr.splitlines() if x.startswith("saved ")]
    path = Path(line.removeprefix("saved "))
    assert path.parent == home / "bench" / "results" and path.is_file()  # the whole path, one line


# ---------------------------------------------------------------------- --name
def test_a_predictions_run_takes_a_name(casino_home: Bank, tmp_path: Path) -> None:
    from convbank.bench import task_named, write_predictions
    from convbank.query import load

    data = task_named("casino-strategy").data(load("casino"))
    gold = {e.id: g for e, g in zip(data.examples, data.gold, strict=True)}
    file = write_predictions(tmp_path / "mine.jsonl", {i: gold[i] for i in data.test_ids()})
    runner = CliRunner()
    bench = ["bench", "casino-strategy", "--predictions", str(file), "--json"]
    default = json.loads(runner.invoke(cli, bench).stdout)
    assert default["model"] == "mine.jsonl"
    named = runner.invoke(cli, [*bench, "--name", "bert-base", "--save"])
    assert named.exit_code == 0, named.output
    assert (
        json.loads(named.stdout)["model"] == "bert-base"
        and json.loads(named.stdout)["metrics"]["mean_f1"] == 1
    )
    listed = json.loads(runner.invoke(cli, ["bench", "--results", "--json"]).stdout)
    assert [r["model"] for r in listed] == ["bert-base"]
    renamed = json.loads(
        runner.invoke(cli, ["bench", "casino-strategy", "-m", "random", "--name", "dice", "--json"]).stdout
    )
    assert renamed["model"] == "dice"
    empty = runner.invoke(cli, [*bench, "--name", " "])
    assert empty.exit_code == 2
    assert empty.output.splitlines()[-1] == "Error: Invalid value for --name: a run's name cannot be empty"


# ---------------------------------------------------------------------- did you mean
def _export_format() -> None:
    from convbank.export import export

    export(None, "hff", Path("out"))  # type: ignore[arg-type]


def _model() -> None:
    from convbank.bench import run

    run("casino-strategy", model="tfdf")


def _results() -> None:
    from convbank.bench import leaderboard

    leaderboard("casino-stratgy")


TASKS = ", ".join(registry.tasks.names())
LOOKUPS: list[tuple[str, Callable[[], Any], type[ConvbankError], str]] = [
    (
        "dataset",
        lambda: catalog.get("casion"),
        UnknownDatasetError,
        f"unknown dataset 'casion'; did you mean casino? known datasets: {DATASETS}",
    ),
    (
        "config",
        lambda: catalog.get("pec").config("hapy"),
        UnknownDatasetError,
        "pec has no config 'hapy'; did you mean happy? known configs: happy, offmychest, all",
    ),
    (
        "split",
        lambda: catalog.get("casino").parts(split="trian"),
        UnknownDatasetError,
        "casino/default has no split 'trian'; did you mean train? known splits: train, valid, test",
    ),
    (
        "task",
        lambda: registry.tasks.get("casino-stratgy"),
        UnknownDatasetError,
        f"unknown task 'casino-stratgy'; did you mean casino-strategy? known tasks: {TASKS}",
    ),
    (
        "engine",
        lambda: registry.engines.get("lcoal"),
        UnknownDatasetError,
        "unknown engine 'lcoal'; did you mean local? known engines: local, spark",
    ),
    (
        "model",
        _model,
        BenchError,
        "casino-strategy has no model 'tfdf'; did you mean tfidf? one of random, tfidf, embed, finetune, "
        "or module:Class",
    ),
    (
        "format",
        _export_format,
        ExportError,
        "unknown export format 'hff'; did you mean hf? one of source, hf, convokit, parlai, chat, sharegpt, "
        "jsonl, parquet, csv, croissant",
    ),
    (
        "saved runs of a task",
        _results,
        UnknownDatasetError,
        f"unknown task 'casino-stratgy'; did you mean casino-strategy? known tasks: {TASKS}",
    ),
    (
        "no close name",
        lambda: catalog.get("nope"),
        UnknownDatasetError,
        f"unknown dataset 'nope'; known datasets: {DATASETS}",
    ),
]


@pytest.mark.parametrize(("what", "lookup", "error", "message"), LOOKUPS, ids=[x[0] for x in LOOKUPS])
def test_every_lookup_suggests_the_closest_names(
    what: str, lookup: Callable[[], Any], error: type[ConvbankError], message: str
) -> None:
    with pytest.raises(error) as info:
        lookup()
    assert str(info.value) == message


def test_labels_meta_keys_and_viewer_sorts_use_the_same_hint(built: Bank) -> None:
    from convbank.errors import UnknownFieldError
    from convbank.query import load
    from convbank.web.data import _order_problems

    known = {"strategy": ["uv-part", "self-need"]}
    assert unknown_label("casino", "strategy:uv-prt", known) == (
        "casino has no label 'uv-prt' in layer 'strategy'; did you mean strategy:uv-part? labels: uv-part, self-need"
    )
    assert unknown_label("casino", "uv-part", known) == (
        "casino has no annotation layer 'uv-part' (a label is layer:label); did you mean strategy:uv-part? "
        "layers: strategy"
    )
    with pytest.raises(UnknownFieldError) as info:
        load("convai2", "volunteers").filter(meta={"eval_scor": 4})
    assert str(info.value).startswith(
        "convai2 conversations have no meta key 'eval_scor'; did you mean eval_score? keys: "
    )
    assert _order_problems(catalog.get("casino"), {"sort": "turn"}) == [
        "sort 'turn' is not one of source, id, turns, split, meta:satisfaction, meta:opponent_likeness, "
        "meta:points_scored; did you mean turns?"
    ]


@pytest.mark.parametrize(
    ("args", "last_line"),
    [
        (
            ["info", "casion"],
            f"error: unknown dataset 'casion'; did you mean casino? known datasets: {DATASETS}",
        ),
        (
            ["export", "casino", "--format", "hff", "-o", "out"],
            "Error: Invalid value for '--format': 'hff' is not one of 'source', 'hf', 'convokit', 'parlai', "
            "'chat', 'sharegpt', 'jsonl', 'parquet', 'csv', 'croissant'; did you mean hf?",
        ),
        (
            ["query", "SELECT 1", "--format", "jsn"],
            "Error: Invalid value for '--format': 'jsn' is not one of 'table', 'json', 'ndjson', 'csv'; "
            "did you mean json, ndjson?",
        ),
        (
            ["bench", "casino-stratgy"],
            f"error: unknown task 'casino-stratgy'; did you mean casino-strategy? known tasks: {TASKS}",
        ),
    ],
    ids=["dataset", "export-format", "query-format", "task"],
)
def test_the_command_line_suggests_too(args: list[str], last_line: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == last_line


def test_did_you_mean_is_empty_for_no_close_name_or_a_non_string() -> None:
    assert did_you_mean("casion", ["casino", "ccpe"]) == "did you mean casino? "
    assert did_you_mean("uv-prt", ["uv-part"], prefix="strategy:") == "did you mean strategy:uv-part? "
    assert did_you_mean("nope", ["casino"]) == "" and did_you_mean(3, ["casino"]) == ""


# ---------------------------------------------------------------------- submodules
def test_every_public_submodule_is_an_attribute_after_import_convbank() -> None:
    import pkgutil

    import convbank

    public = sorted(m.name for m in pkgutil.iter_modules(convbank.__path__) if not m.name.startswith("_"))
    public.remove("build")  # convbank.build is the function (the module: sys.modules["convbank.build"])
    assert sorted(convbank._SUBMODULES) == public and set(public) <= set(dir(convbank))
    probe = (  # torch's module is left out: it imports PyTorch (seconds), as it should when used
        "import sys, convbank; before = set(sys.modules); import convbank.cli; "
        "got = {type(getattr(convbank, n)).__name__ for n in convbank._SUBMODULES if n != 'torch'}; "
        "print(sorted(got), 'convbank.registry' not in before, 'pyarrow' not in before, "
        "convbank.registry.tasks.get('casino-strategy').name, callable(convbank.build))"
    )
    printed = run_probe(probe)
    assert printed == ["['module']", "True", "True", "casino-strategy", "True"]


def test_bench_runs_one_of_model_predictions_and_export(built: Bank, tmp_path: Path) -> None:
    """Pass 16. Before: ``bench casino-strategy --predictions mine.jsonl -m tfidf`` scored the
    file and dropped ``-m`` unsaid (exit 0, the run named after the file), and
    ``--export DIR`` with either (or with ``--save``, ``--write-predictions``, ``--name``)
    wrote the export, nothing run, scored, saved or written (2 of 2 tries each).
    Now a usage line, exit 2, nothing written."""
    mine = tmp_path / "mine.jsonl"
    mine.write_text('{"example_id": "543/0", "prediction": []}\n', encoding="utf-8")
    out = tmp_path / "tasks"
    cases = {
        ("-m", "tfidf", "--predictions", str(mine)): "--model and --predictions",
        ("--predictions", str(mine), "--export", str(out)): "--predictions and --export",
        ("-m", "random", "--export", str(out)): "--model and --export",
        ("--export", str(out), "--save"): "--export and --save",
        ("--export", str(out), "--write-predictions", str(mine)): "--export and --write-predictions",
        ("--export", str(out), "--name", "mine"): "--export and --name",
    }
    for args, said in cases.items():
        result = CliRunner().invoke(cli, ["bench", "casino-strategy", *args])
        assert result.exit_code == 2, result.output
        assert result.stderr.endswith(f"Error: {said} ask for different runs; give one of them\n"), (
            result.stderr
        )
    assert not out.exists()


def test_an_empty_folder_to_write_into_is_refused(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 16. Before: ``export casino --format csv -o ""`` (``-o "$UNSET"``) and ``bench
    TASK --export ""`` wrote into the current folder, exit 0 (2 of 2 tries each): the empty
    path read as ``.``. Now one line, exit 2, nothing written; ``.`` still names it."""
    monkeypatch.chdir(tmp_path)
    export = ["export", "casino", "--split", "valid", "--format", "csv", "-o"]
    for args, option in ((export, "-o"), (["bench", "casino-strategy", "--export"], "--export")):
        result = CliRunner().invoke(cli, [*args, ""])
        assert (result.exit_code, result.stderr) == (
            2,
            f"error: {option}: is empty; name a folder ('.' for the current one)\n",
        )
    assert list(tmp_path.iterdir()) == []
    assert CliRunner().invoke(cli, [*export, "."]).exit_code == 0
    assert (tmp_path / "casino_default_valid.turns.csv").exists()


def test_a_missing_choice_option_names_its_choices_on_one_line(tmp_path: Path) -> None:
    """Pass 20. Before: `export casino -o out` said ``Choose from:\\n\\tsource,\\n\\thf,...``,
    click's newlines and tabs shown as escapes, 1 of 1; now its choices one after the other."""
    result = CliRunner().invoke(cli, ["export", "casino", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Missing option '--format'. Choose from: source, hf, convokit, parlai, chat, "
        "sharegpt, jsonl, parquet, csv, croissant"
    )
