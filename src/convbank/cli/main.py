"""``convbank``: fetch, read, build, query and show conversational datasets."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import msgspec
from rich.console import Console
from rich.table import Table

from convbank import __version__, catalog
from convbank.build import BuildReport, bank_root, build, read_raw, source_paths
from convbank.cli._options import config_option, engine_options, source_options, split_option
from convbank.cli._render import render_conversation
from convbank.errors import ConvbankError
from convbank.export import FORMATS as EXPORT_FORMATS
from convbank.fetch import Fetcher, checksum_status, home
from convbank.store import Bank

out = Console()
err = Console(stderr=True)
_json = msgspec.json.Encoder()


class ConvbankGroup(click.Group):
    """Turns convbank errors into one line on stderr and a non-zero exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConvbankError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except BrokenPipeError:  # e.g. `convbank raw casino | head`
            sys.stderr.close()
            ctx.exit(0)


@click.group(cls=ConvbankGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="convbank")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """convbank: conversational datasets, fetched, read faithfully, stored as Parquet and
    queried with SQL.

    Data lives under CONVBANK_HOME (default: the user's cache folder); CONVBANK_OFFLINE=1
    forbids downloads; CONVBANK_SOURCE lists folders holding source files.
    """


def _fetcher(sources: Sequence[Path], no_verify: bool) -> Fetcher:
    return Fetcher(sources=list(sources), verify=not no_verify, progress=err.is_terminal)


def _echo_json(data: Any) -> None:
    sys.stdout.buffer.write(_json.encode(data) + b"\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------- catalog
@cli.command("list")
@source_options
def list_(sources: Sequence[Path], no_verify: bool) -> None:
    """List the datasets: configs, splits and counts, licence, sources present, built."""
    fetcher = _fetcher(sources, no_verify)
    built = Bank(bank_root()).built()
    table = Table(title="convbank datasets")
    for col in ("name", "title", "configs and splits", "license", "sources", "built"):
        table.add_column(col)
    for ds in catalog.catalog:
        configs = "\n".join(
            f"{c.name}: " + ", ".join(f"{s} {n:,}" if n is not None else s for s, n in c.splits.items())
            for c in ds.configs
        )
        files = ds.required_files()
        present = sum(fetcher.find(ds, f) is not None for f in files)
        sources_text = (
            "all" if present == len(files) else ("none" if present == 0 else f"{present}/{len(files)}")
        )
        configs_built = sorted(built.get(ds.name, {}).get("configs", {}))
        table.add_row(ds.name, ds.title, configs, ds.license, sources_text, ", ".join(configs_built) or "no")
    out.print(table)


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@source_options
def info(name: str, as_json: bool, sources: Sequence[Path], no_verify: bool) -> None:
    """Show a dataset's card, configs, splits, files and checksum status."""
    ds = catalog.get(name)
    fetcher = _fetcher(sources, no_verify)
    data = ds.describe()
    for f, entry in zip(ds.files, data["files"], strict=True):
        found = fetcher.find(ds, f)
        entry["checksum"] = checksum_status(f, fetcher.root)
        entry["optional"] = f.name in ds.optional_files
        entry["present"] = str(found) if found else None
    data["built"] = sorted(Bank(bank_root()).built().get(name, {}).get("configs", {}))
    if as_json:
        _echo_json(data)
        return
    out.print(f"[bold]{ds.title}[/bold] ({ds.name}, version {ds.version})")
    out.print(ds.description, markup=False)
    out.print(f"license: {ds.license}   homepage: {ds.homepage}", markup=False)
    table = Table("config", "split", "conversations", title="configs")
    for cname, cfg in data["configs"].items():
        for split, n in cfg["splits"].items():
            table.add_row(cname, split, f"{n:,}" if n is not None else "?")
    out.print(table)
    files = Table("file", "sha256", "checksum", "present", title="source files")
    for entry in data["files"]:
        files.add_row(entry["name"], entry["sha256"] or "-", entry["checksum"], entry["present"] or "no")
    out.print(files)
    out.print("citation:", markup=False)
    out.print(ds.citation, markup=False, highlight=False)


@cli.command()
@click.argument("name")
@config_option
@source_options
def fetch(name: str, config: str | None, sources: Sequence[Path], no_verify: bool) -> None:
    """Download (or find locally) and verify a dataset's source files."""
    ds = catalog.get(name)
    paths = source_paths(ds, config, _fetcher(sources, no_verify))
    for fname, path in paths.items():
        click.echo(f"{fname}\t{path}")


@cli.command()
@click.argument("name")
@config_option
@split_option
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="Print at most N records.")
@source_options
def raw(
    name: str,
    config: str | None,
    split: str | None,
    limit: int | None,
    sources: Sequence[Path],
    no_verify: bool,
) -> None:
    """Print the raw records of a dataset as JSON lines, exactly as published."""
    fetcher = _fetcher(sources, no_verify)
    write = sys.stdout.buffer.write
    for n, (_, _, record) in enumerate(read_raw(name, config, split, fetcher=fetcher)):
        if limit is not None and n >= limit:
            break
        write(_json.encode(record) + b"\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------- bank
@cli.command("build")
@click.argument("names", nargs=-1)
@config_option
@source_options
@engine_options(
    ("local", "spark"), "Read and map in this process, or in Apache Spark tasks (convbank[spark])."
)
@click.option(
    "--shards", type=click.IntRange(min=1), default=None, help="Spark: pieces per splittable file (PEC)."
)
def build_(
    names: Sequence[str],
    config: str | None,
    sources: Sequence[Path],
    no_verify: bool,
    engine: str,
    master: str,
    shards: int | None,
) -> None:
    """Build the bank: fetch, read, map and store datasets as Parquet under CONVBANK_HOME.

    With no NAMES, tries every dataset. Configs whose sources cannot be had are reported
    with what to do; the exit code is 3 when nothing was built, or when NAMES were given and
    one of their configs could not be built.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    fetcher = _fetcher(sources, no_verify)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        tasks: dict[tuple[str, str, str], Any] = {}

        def progress(dataset: str, cfg: str, split: str, n: int) -> None:
            key = (dataset, cfg, split)
            if key not in tasks:
                total = catalog.get(dataset).config(cfg).splits.get(split)
                tasks[key] = bar.add_task(f"{dataset}/{cfg}/{split}", total=total)
            bar.advance(tasks[key], n)

        runner: Any = None
        if engine == "spark":
            from convbank.engines.spark import SparkEngine

            runner = SparkEngine(master, shards_per_file=shards)
        report = build(list(names) or None, config=config, fetcher=fetcher, progress=progress, engine=runner)
    _print_report(report)
    if not report.splits or (names and report.failures):
        raise click.exceptions.Exit(3)


def _print_report(report: BuildReport) -> None:
    table = Table(title=f"bank at {bank_root()}")
    for col in (
        "dataset",
        "config",
        "split",
        "conversations",
        "participants",
        "turns",
        "annotations",
        "seconds",
    ):
        table.add_column(col, justify="left" if col in ("dataset", "config", "split") else "right")
    for s in report.splits:
        conv = f"{s.conversations:,}"
        if s.expected is not None and s.expected != s.conversations:
            conv += f" (published {s.expected:,})"
        table.add_row(
            s.dataset,
            s.config,
            s.split,
            conv,
            f"{s.participants:,}",
            f"{s.turns:,}",
            f"{s.annotations:,}",
            f"{s.seconds:.2f}",
        )
    if report.splits:
        out.print(table)
    for name, message in report.failures.items():
        click.echo(f"not built {name}: {message}", err=True)
    click.echo(f"{len(report.splits)} splits built in {report.seconds:.1f} s", err=True)


@cli.command()
@click.argument("sql_text", metavar="SQL")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True
)
@engine_options(
    ("duckdb", "spark"), "DuckDB in this process, or Spark SQL (convbank[spark]; meta is JSON text there)."
)
def query(sql_text: str, fmt: str, engine: str, master: str) -> None:
    """Run read-only SQL over the views conversations, participants, turns, annotations
    (all datasets) and <dataset>_raw."""
    if engine == "spark":
        from convbank.engines.spark import sql as spark_sql

        result = spark_sql(sql_text, bank=Bank(bank_root()), master=master)
    else:
        from convbank.query import sql

        result = sql(sql_text)
    rows = result.to_pylist()
    if fmt == "json":
        _echo_json(rows)
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(result.column_names)
        writer.writerows([_cell(v) for v in row.values()] for row in rows)
        sys.stdout.write(buf.getvalue())
    else:
        table = Table(*result.column_names)
        for row in rows:
            table.add_row(*(_cell(v) for v in row.values()))
        out.print(table)
        err.print(f"{len(rows)} rows", highlight=False)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return _json.encode(value).decode()
    return str(value)


@cli.command()
@click.argument("name")
@click.argument("conversation_id")
@config_option
@split_option
@click.option("--json", "as_json", is_flag=True, help="Print the unified conversation as JSON.")
def show(name: str, conversation_id: str, config: str | None, split: str | None, as_json: bool) -> None:
    """Show one conversation: participants, turns, actions, annotations, outcomes."""
    from convbank.query import load

    corpus = load(name, config, split)
    conv = corpus[conversation_id]
    if as_json:
        _echo_json(conv.to_dict())
    else:
        render_conversation(out, conv, facts=corpus.fact_texts(conv))


@cli.command()
@click.argument("name")
@config_option
@split_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(EXPORT_FORMATS)),
    required=True,
    help="source: the publisher's files; hf: Hugging Face save_to_disk per config; convokit: a "
    "ConvoKit corpus folder; parlai: ParlAI text files; chat: chat-format JSONL for fine-tuning; "
    "jsonl: unified conversations; parquet: the four unified tables; csv: the turns; croissant: "
    "Parquet plus Croissant JSON-LD.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write into (created; files of the same name are replaced once complete).",
)
@click.option(
    "--where", default=None, help="SQL condition on the conversations view selecting what to export."
)
@click.option(
    "--as",
    "as_participant",
    default=None,
    help="chat and parlai: the participant seen from (default: the assistant side; CaSiNo "
    "mturk_agent_1, PEC the responder, ConvAI2 the bot).",
)
def export(
    name: str,
    config: str | None,
    split: str | None,
    fmt: str,
    output: Path,
    where: str | None,
    as_participant: str | None,
) -> None:
    """Export a built dataset to the formats other tools read; prints the paths written.

    Example: convbank export convai2 --config volunteers --format chat --where
    "(meta->>'eval_score')::INT >= 4" -o out/
    """
    from convbank.export import export as run_export
    from convbank.query import load

    for path in run_export(
        load(name, config, split), fmt, output, where=where, as_participant=as_participant
    ):
        click.echo(str(path))


# ---------------------------------------------------------------------- quality
@cli.command()
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object for all datasets.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Findings printed per check (text output; --json prints all).",
)
def validate(names: Sequence[str], as_json: bool, limit: int) -> None:
    """Check the invariants of built datasets (default: all built).

    Runs the generic checks (unique ids, published counts, contiguous turn indices,
    annotations on existing turns, spans inside the text and matching the quoted text,
    speakers among the participants) and each dataset's own. --json prints
    {"checks": [{"dataset", "name", "description", "passed", "failed", "severity"}...],
    "findings": [{"dataset", "check", "severity", "conversation_id", "message"}...]} for all
    datasets together. Exit code 1 when any finding is an error, else 0.
    """
    from convbank.validate import validate as run_checks

    report = run_checks(list(names) or None)
    if as_json:
        _echo_json(report.to_dict())
    else:
        table = Table("dataset", "check", "passed", "failed", "worst", title="validation")
        for c in report.checks:
            worst = f"[{_SEVERITY_STYLE[c.severity]}]{c.severity}[/]" if c.severity else "-"
            table.add_row(c.dataset, c.name, f"{c.passed:,}", f"{c.failed:,}", worst)
        out.print(table)
        shown: dict[tuple[str, str], int] = {}
        for f in report.findings:
            key = (f.dataset, f.check)
            shown[key] = shown.get(key, 0) + 1
            if shown[key] <= limit:
                where = f" {f.conversation_id}" if f.conversation_id else ""
                out.print(
                    f"[{_SEVERITY_STYLE[f.severity]}]{f.severity}[/] {f.dataset}{where} {f.check}: ",
                    end="",
                )
                out.print(f.message, markup=False, highlight=False)
        for (dataset, name), n in shown.items():
            if n > limit:
                out.print(
                    f"... {n - limit:,} more {dataset} {name} findings (--limit or --json)", markup=False
                )
        counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "warning", "info")}
        err.print(", ".join(f"{n:,} {s}s" for s, n in counts.items()), highlight=False)
    if not report.ok:
        raise click.exceptions.Exit(1)


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


@cli.command()
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {dataset: {title, splits: [...], ...}}.")
def stats(names: Sequence[str], as_json: bool) -> None:
    """Describe built datasets in numbers (default: all built): per split, conversations,
    participants, turns, words, turns per conversation, labels per annotation layer and the
    key metadata (CaSiNo outcomes, Curiosity ratings and likes, ConvAI2 eval_score and
    profile_match, PEC persona sizes), then each dataset's cross-tabs."""
    from convbank.stats import stats as compute

    data = compute(list(names) or None)
    if as_json:
        _echo_json(data)
        return
    for name, ds in data.items():
        table = Table(
            "config",
            "split",
            "conversations",
            "participants",
            "turns",
            "words",
            "turns/conv mean · median · max",
            title=f"{name}: {ds['title']}",
        )
        for s in ds["splits"]:
            tpc = s["turns_per_conversation"]
            table.add_row(
                s["config"],
                s["split"],
                f"{s['conversations']:,}",
                f"{s['participants']:,}",
                f"{s['turns']:,}",
                f"{s['words']:,}",
                f"{tpc['mean']:.2f} · {tpc['median']:g} · {tpc['max']}",
            )
        out.print(table)
        for s in ds["splits"]:
            where = f"{name}/{s['config']}/{s['split']}"
            for layer, labels in s["labels"].items():
                _print_counts(f"{where} {layer} labels", labels)
            for key, entry in s["metadata"].items():
                extra = f" (mean {entry['mean']:g}, median {entry['median']:g})" if "mean" in entry else ""
                _print_counts(f"{where} {key}{extra}", entry["counts"])
        for t in ds["crosstabs"]:
            table = Table(*t["columns"], title=t["title"], caption=t["question"])
            for row in t["rows"]:
                table.add_row(*(f"{v:.2f}" if isinstance(v, float) else _cell(v) for v in row))
            out.print(table)


def _print_counts(title: str, counts: dict[str, int]) -> None:
    total = sum(counts.values()) or 1
    body = ", ".join(f"{k or '(empty)'} {n:,} ({100 * n / total:.1f}%)" for k, n in counts.items())
    out.print(f"[bold]{title}[/bold]: ", end="")
    out.print(body, markup=False, highlight=False)


@cli.command()
@click.argument("names", nargs=-1)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="HTML file to write.",
)
@click.option(
    "--validate/--no-validate",
    "run_checks",
    default=True,
    show_default=True,
    help="Include the validation results.",
)
def report(names: Sequence[str], output: Path, run_checks: bool) -> None:
    """Write one self-contained HTML report (no scripts, no network) of built datasets:
    cards, sizes, label and metadata charts, turn-length histograms, cross-tabs and the
    validation results."""
    from convbank.report import write_report

    click.echo(str(write_report(output, list(names) or None, validate=run_checks)))


# ---------------------------------------------------------------------- benchmarks
@cli.command()
@click.argument("task", required=False)
@click.option("--list", "list_tasks", is_flag=True, help="List the tasks, their models and references.")
@click.option("--model", "-m", default=None, help="Model (default: the task's strongest; see --list).")
@config_option
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of folds, sampling and random baselines."
)
@click.option(
    "--json", "as_json", is_flag=True, help='Print {"task", "model", "metrics", "reference", "seconds", ...}.'
)
def bench(
    task: str | None, list_tasks: bool, model: str | None, config: str | None, seed: int, as_json: bool
) -> None:
    """Run a benchmark task of a dataset's paper on the bank: metrics per label or class,
    the published reference figures beside ours, the model and the seconds taken.

    Results on fixture data (splits whose counts differ from the publisher's) are labelled
    as such. Same seed, same numbers.
    """
    from convbank.bench import TASKS, run

    if list_tasks or task is None:
        if as_json:
            _echo_json([t.describe() for t in TASKS.values()])
            return
        table = Table("task", "dataset", "models (default last)", "metric", title="benchmark tasks")
        for t in TASKS.values():
            table.add_row(t.name, t.dataset, ", ".join(t.models), t.description)
        out.print(table)
        return
    result = run(task, model=model, config=config, seed=seed)
    if as_json:
        _echo_json(result.to_dict())
        return
    title = f"{result.task} · {result.dataset}/{result.config} · model {result.model} · seed {result.seed}"
    out.print(f"[bold]{title}[/bold]")
    out.print(f"protocol: {result.protocol}", markup=False, highlight=False)
    if result.data != "real":
        out.print(
            "[bold yellow]FIXTURE DATA[/]: the bank's splits do not have the publisher's counts; "
            "these are not results on the real dataset.",
        )
    table = Table("metric", "ours")
    for name, value in _flatten(result.metrics):
        table.add_row(name, _number(value))
    out.print(table)
    refs = Table("reference", "value", title="published figures")
    for name, value in _flatten(result.reference):
        refs.add_row(name, _number(value))
    out.print(refs)
    out.print(f"{result.seconds:.1f} s", highlight=False)


def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, f"{name} / ")
        else:
            rows.append((name, value))
    return rows


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "none" if value is None else str(value)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port.")
def serve(host: str, port: int) -> None:
    """Serve the read-only web viewer over the bank: catalog, dataset pages with charts and
    filters, conversations with their annotations, and a SQL console (needs convbank[web])."""
    from convbank.errors import require

    require("starlette", "web", "The web viewer")
    require("uvicorn", "web", "The web viewer")
    import uvicorn

    from convbank.web import create_app

    uvicorn.run(create_app(), host=host, port=port, log_level="warning")


@cli.command()
def where() -> None:
    """Print convbank's folders (home, cache, bank)."""
    click.echo(f"home\t{home()}\ndownloads\t{home() / 'downloads'}\nbank\t{bank_root()}")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="convbank")
