"""``convbank bench``: a dataset paper's benchmark task on the bank, with a built-in model,
your own (``module:Class``) or your predictions file; progress bars with the time left on a
terminal, and at Ctrl-C the folds done so far as a partial result (exit 130)."""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from convbank._wording import counted
from convbank.cli._options import config_option, file_option, folder_option

if TYPE_CHECKING:
    from convbank.bench import Result, Task

__all__ = ["bench"]


# ---------------------------------------------------------------------- benchmarks
@click.command()
@click.argument("task", required=False)
@click.option("--list", "list_tasks", is_flag=True, help="List the tasks, their models and references.")
@click.option(
    "--model",
    "-m",
    default=None,
    help="A built-in model (default: the task's strongest; see --list) or your own as module:Class "
    "(an object with predict(examples), or rank(examples) for ranking, and optionally fit(examples, gold)).",
)
@config_option
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of folds, sampling and random baselines.",
)
@click.option(
    "--export",
    "export_dir",
    type=click.Path(file_okay=False),
    callback=folder_option,
    help="Write the task's examples and gold answers per fold (JSONL and Parquet) under DIR/<task>/.",
)
@click.option("--overwrite", is_flag=True, help="Let --export replace another export's files in DIR.")
@click.option(
    "--predictions",
    "predictions_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Score a JSONL or Parquet file of {example_id, prediction} with the task's metric.",
)
@click.option(
    "--name",
    "run_name",
    metavar="NAME",
    help="The run's name in the result and the saved runs (default: the built-in model's name, "
    "module:Class, or the predictions file's name). Example: --predictions mine.jsonl --name bert-base",
)
@click.option(
    "--write-predictions",
    "write_file",
    type=click.Path(dir_okay=False),
    callback=file_option,
    help="Also write the model's predictions (JSONL, or Parquet for a .parquet name).",
)
@click.option(
    "--save", is_flag=True, help="Save the run (task, model, seed, version, sources' sha256, metrics)."
)
@click.option("--results", "show_results", is_flag=True, help="List the saved runs as a leaderboard.")
@click.option(
    "--json", "as_json", is_flag=True, help='Print {"task", "model", "metrics", "reference", "seconds", ...}.'
)
def bench(
    task: str | None,
    list_tasks: bool,
    model: str | None,
    config: str | None,
    seed: int,
    export_dir: Path | None,
    overwrite: bool,
    predictions_file: Path | None,
    run_name: str | None,
    write_file: Path | None,
    save: bool,
    show_results: bool,
    as_json: bool,
) -> None:
    """Run a benchmark task of a dataset's paper on the bank: metrics per label or class,
    the dataset authors' published figures (with paper and table, or "not found") and the
    figures measured by convbank in a column of their own, the model and the seconds taken.

    Bring your own model: --export DIR writes exactly what a model sees and is scored
    against, per fold; --predictions FILE scores your predictions with the task's metric;
    --model module:Class runs your model class on every fold. Results on fixture data
    (splits whose counts differ from the publisher's) are labelled as such. Same seed, same
    numbers. A model that takes minutes is announced up front with the quicker ones; Ctrl-C
    after a fold prints the folds done as a PARTIAL RESULT (never saved), exit 130.

    \b
    Examples:
      convbank bench casino-strategy -m tfidf --save
      convbank bench casino-strategy --export tasks/
      convbank bench casino-strategy --predictions mine.jsonl --name my-bert
      convbank bench curiosity-like -m my_models:LikeModel
      convbank bench --results
    """
    from convbank.bench import export_task, task_named, write_predictions
    from convbank.cli._console import echo_json, say

    if show_results:
        _show_results(task, as_json)
        return
    if list_tasks or task is None:
        _list_tasks(as_json)
        return
    from convbank.query import load

    _one_run(model, predictions_file, export_dir, save, write_file, run_name)
    if run_name is not None and not run_name.strip():
        raise click.BadParameter("a run's name cannot be empty", param_hint="--name")
    chosen = task_named(task)
    if write_file is not None:  # before the model runs, not after its minutes
        from convbank.bench.files import refuse_unwritable

        refuse_unwritable(write_file)
    if export_dir is not None:
        data = chosen.data(load(chosen.dataset, config), seed)
        written = export_task(chosen, data, export_dir, seed=seed, overwrite=overwrite)
        from convbank._controls import one_line

        click.echo(f"{counted(len(written), 'file')} in {one_line(str(export_dir / chosen.name))}")
        return
    if ":" in (model or ""):
        sys.path.insert(0, os.getcwd())  # module:Class from the current folder, as python -m would
    elif predictions_file is None and (note := chosen.time_note(model or chosen.models[-1])):
        say(note)  # up front: how long it takes, what is quicker
    result, signum = _measured(chosen, model, predictions_file, config, seed, run_name)
    if result.partial:
        _report_partial(result, as_json, signum)
    if write_file is not None:
        write_predictions(write_file, result.predictions)
    for note in result.notes:  # a metric that overflowed: null, said once on stderr
        say(f"note: {note}")
    if save:
        from convbank.bench import save as save_run

        saved = save_run(result, load(chosen.dataset, config))
        say(f"saved {saved}")
    if as_json:
        echo_json(result.to_dict())
        return
    _print_result(result)


def _show_results(task: str | None, as_json: bool) -> None:
    """``--results``: the saved runs as a leaderboard (of one task, or all); a file that is
    not a saved run is one warning line each, the others listed."""
    import warnings

    from convbank.bench import leaderboard
    from convbank.cli._console import say

    with warnings.catch_warnings(record=True) as skipped:
        warnings.simplefilter("always")
        rows = leaderboard(task)
    for warning in skipped:
        say(f"warning: {warning.message}")
    _print_results(rows, as_json)


def _list_tasks(as_json: bool) -> None:
    """``--list`` (or no task): every task with its dataset, models and metric."""
    from rich.table import Table

    from convbank.bench import TASKS
    from convbank.cli._console import echo_json, out

    if as_json:
        echo_json([t.describe() for t in TASKS])
        return
    table = Table("task", "dataset", "models (default last)", "metric", title="benchmark tasks")
    for t in TASKS:
        table.add_row(t.name, t.dataset, ", ".join(t.models), t.description)
    out.print(table)


def _one_run(
    model: str | None,
    predictions_file: Path | None,
    export_dir: Path | None,
    save: bool,
    write_file: Path | None,
    run_name: str | None,
) -> None:
    """A usage error when two of --model, --predictions and --export are given, or --export
    with what only a run takes (--save, --write-predictions, --name): one would be dropped
    unsaid, the run scored (or saved, or written) not the one asked for."""
    runs = [("--model", model), ("--predictions", predictions_file), ("--export", export_dir)]
    taken = [("--save", save), ("--write-predictions", write_file), ("--name", run_name)]
    for options in (runs, [runs[2], *taken] if export_dir is not None else []):
        asked = [name for name, value in options if value]
        if len(asked) > 1:
            raise click.UsageError(f"{' and '.join(asked)} ask for different runs; give one of them")


def _stdout_for_the_result_alone() -> None:
    """In the ``convbank`` process, from before a model's code runs to the command's end: file
    descriptor 1 is made stderr's and ``sys.stdout`` is ``sys.stderr``, so whatever the model
    prints, whenever it does (a thread it started that prints after its call returned, a
    library in C, a subprocess), goes to stderr; the result is written through a copy of the
    real stdout, which the console ``out`` (and so :func:`echo_json`) writes to. (Before: a
    model's thread printing after ``predict`` put 4 of its 5 lines into ``bench --json``'s
    stdout; found by pass 22.) Where stdout is no descriptor 1 (a test's ``CliRunner``) or
    cannot be copied, nothing changes: each call into the model still prints to stderr
    (:func:`convbank.bench._kept.kept`)."""
    from convbank.bench._kept import stdout_to_stderr
    from convbank.cli._console import out

    stdout = sys.stdout
    try:
        if stdout is None or stdout.fileno() != 1:
            return
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return
    copy = stdout_to_stderr()
    if copy is None:
        return
    out.file = open(  # noqa: SIM115 - the command's stdout until the process ends
        copy, "w", encoding=stdout.encoding, errors=stdout.errors, closefd=True
    )
    sys.stdout = sys.stderr


def _measured(
    chosen: Task,
    model: str | None,
    predictions_file: Path | None,
    config: str | None,
    seed: int,
    run_name: str | None,
) -> tuple[Result, int]:
    """The task's result: the predictions file scored, or the model run on every fold (after
    Ctrl-C, SIGTERM or SIGHUP, the folds done as a partial result), with progress shown as
    bars on a terminal and, in a log (nohup, SLURM), as a line per stage and fold with the
    seconds; and the signal that stopped it (SIGINT when none did)."""
    from convbank._textio import utf8_text  # here: it imports msgspec, which --help need not
    from convbank.bench import Interrupted, run, score
    from convbank.cli._console import err
    from convbank.cli._signals import Terminated
    from convbank.tasks.progress import LineWatcher, Watcher, watched

    _stdout_for_the_result_alone()  # from here on, what a model prints goes to stderr
    with _BenchBars() as bars:
        watcher: Watcher = bars if err.is_terminal else LineWatcher(sys.stderr)
        with watched(watcher):
            if predictions_file is not None:
                name = utf8_text(run_name or predictions_file.name)  # as it is saved
                scored = score(chosen, predictions_file, config=config, seed=seed, model=name)
                return scored, int(signal.SIGINT)
            try:
                result, signum = run(chosen, model=model, config=config, seed=seed), int(signal.SIGINT)
            except Interrupted as stop:
                if stop.result is None:  # no fold finished: nothing to report
                    stopped = KeyboardInterrupt() if stop.signum == signal.SIGINT else Terminated(stop.signum)
                    raise stopped from None
                result, signum = stop.result, stop.signum
            result.model = utf8_text(run_name) if run_name else result.model
            return result, signum


def _report_partial(result: Any, as_json: bool, signum: int) -> None:
    """A run stopped by a signal after some folds: its partial result (marked so), a line on
    stderr, the signal's exit code (Ctrl-C 130, SIGTERM 143, SIGHUP 129); nothing saved or
    written."""
    from convbank.cli._signals import message, stopped_by

    if as_json:
        from convbank.cli._console import echo_json

        echo_json(result.to_dict())
    else:
        _print_result(result, signum)
    done = result.folds_done
    click.echo(
        f"{stopped_by(signum)}: a partial result of {len(done)} of {result.folds} folds "
        f"({', '.join(done)}); not saved, no predictions written",
        err=True,
    )
    raise click.exceptions.Exit(message(signum)[1])


def _print_result(result: Any, signum: int = signal.SIGINT) -> None:
    """A run's result; a partial one (stopped by ``signum``) is marked so, naming the signal."""
    from rich.table import Table
    from rich.text import Text

    from convbank.cli._console import one_line, out
    from convbank.cli._signals import signal_name

    title = f"{result.task} · {result.dataset}/{result.config} · model {result.model} · seed {result.seed}"
    out.print(Text(one_line(title), style="bold"))  # a plugin's text forges no line, drives no terminal
    out.print(Text(one_line(f"protocol: {result.protocol}")))
    if result.partial:
        out.print(
            Text("PARTIAL RESULT", style="bold red"),
            f": stopped by {signal_name(signum)} after {len(result.folds_done)} of {result.folds} folds "
            f"({', '.join(result.folds_done)}); the metrics are those folds' only, not the protocol's.",
            sep="",
        )
    if result.data != "real":
        out.print(
            Text("FIXTURE DATA", style="bold yellow"),
            ": the bank's splits do not have the publisher's counts; "
            "these are not results on the real dataset.",
            sep="",
        )
    table = Table("metric", "ours")
    for name, value in _flatten(result.metrics):
        table.add_row(name, _number(value))
    out.print(table)
    refs = Table(
        "system",
        "metric",
        "split",
        "published (the authors)",
        "measured here (convbank)",
        "source",
        title="reference figures",
    )
    for f in result.reference["published"]:
        refs.add_row(
            f["system"], f["metric"], f.get("split") or "", _number(f["value"], "not found"), "", f["source"]
        )
    for f in result.reference["measured_here"]:
        refs.add_row(f["system"], f["metric"], f.get("split") or "", "", _number(f["value"]), f["source"])
    out.print(refs)
    out.print(f"{result.seconds:.1f} s", highlight=False)


def _print_results(rows: list[dict[str, Any]], as_json: bool) -> None:
    """The saved runs, best first within each task."""
    from rich.table import Table

    from convbank.cli._console import echo_json, one_line, out

    if as_json:
        echo_json(rows)
        return
    if not rows:
        from convbank.bench.results import results_folder

        out.print(f"no saved runs in {results_folder()}; run convbank bench TASK --save", markup=False)
        return
    table = Table(
        "task", "model", "config", "seed", "metric", "score", "data", "convbank", "saved", title="saved runs"
    )
    for r in rows:  # a saved file's text, each cell one line of at most 120 characters
        cells = [r["task"], r["model"], r.get("config", ""), str(r.get("seed", "")), r["metric"]]
        cells += [_number(r["score"]), r.get("data", ""), r.get("convbank", ""), r.get("saved", "")]
        table.add_row(*(_cut(one_line(str(c))) for c in cells))
    out.print(table)


def _cut(text: str, most: int = 120) -> str:
    """``text``, or its start and its length when it is longer than ``most`` characters.

    >>> _cut("M" * 10_000_000, 10)
    'MMMMMMMMMM… (10,000,000 characters)'
    """
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


class _BenchBars:
    """Progress bars (with the time left) of a benchmark's stages: folds, fine-tuning
    batches, embeddings; on stderr, on a terminal only."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        from convbank.cli._console import err

        self._bars = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _TimeLeft(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        )
        self._tasks: dict[int, Any] = {}

    def __enter__(self) -> _BenchBars:
        self._bars.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bars.__exit__(None, None, None)

    def begin(self, stage: int, description: str, total: int) -> None:
        """A stage starts: a bar of ``total`` steps."""
        self._tasks[stage] = self._bars.add_task(description, total=total)

    def advance(self, stage: int) -> None:
        """One step done."""
        self._bars.advance(self._tasks[stage])

    def end(self, stage: int) -> None:
        """The stage is over: its bar goes."""
        self._bars.remove_task(self._tasks.pop(stage))


def _TimeLeft() -> Any:  # noqa: N802 (a rich column, made when the bars are)
    """A column of the time left, estimated from the steps done so far (the first fold
    gives it): rich's own estimates from the last 30 s only, so a stage of folds minutes
    apart never had one."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class TimeLeft(ProgressColumn):
        def render(self, task: Any) -> Text:
            if not task.total or not task.completed or task.elapsed is None:
                return Text("left: after the first step", style="progress.remaining")
            left = task.elapsed / task.completed * (task.total - task.completed)
            minutes, seconds = divmod(round(left), 60)
            return Text(f"about {minutes}:{seconds:02d} left", style="progress.remaining")

    return TimeLeft()


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, f"{name} / ")
        else:
            rows.append((name, value))
    return rows


def _number(value: Any, missing: str = "none") -> str:
    """A figure as printed: four decimals where they show it (zero, or between 0.0001 and a
    million), else six significant digits with an exponent, never a float's hundreds of
    digits (a saved run's ``1e308``); ``missing`` for none.

    >>> [_number(v) for v in (0.1068, 0.0, 1e308, -1.5e-300, 12345678.9, float("nan"), 3, None)]
    ['0.1068', '0.0000', '1e+308', '-1.5e-300', '1.23457e+07', 'nan', '3', 'none']
    """
    if isinstance(value, float):
        shown = value == 0 or 1e-4 <= abs(value) < 1e6
        return f"{value:.4f}" if shown else f"{value:.6g}"
    return missing if value is None else str(value)
