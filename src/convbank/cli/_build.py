"""``convbank build``: its progress bars and its table of what was built, skipped and failed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from convbank.cli._options import config_option, engine_options, fetcher_for, source_options
from convbank.errors import ConvbankError, SourceError
from convbank.settings import bank_root

if TYPE_CHECKING:
    from convbank.build import BuildReport
    from convbank.fetch import Fetcher

__all__ = ["build_", "build_with_bars", "print_report"]


@click.command("build")
@click.argument("names", nargs=-1)
@config_option
@source_options
@engine_options(
    "local",
    "local: read, map and write on this machine's cores; spark: in Apache Spark tasks "
    "(convbank[spark]); or an installed engine.",
)
@click.option(
    "--shards", type=click.IntRange(min=1), default=None, help="Spark: pieces per splittable source file."
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="local: processes that map and write a large config (default: every core).",
)
@click.option(
    "--fail-fast",
    is_flag=True,
    help="Stop at the first config that fails, leaving the rest unbuilt (default: try every "
    "one, then report). Example: convbank build NAME... --fail-fast",
)
def build_(
    names: Sequence[str],
    config: str | None,
    sources: Sequence[Path],
    no_verify: bool,
    engine: str,
    master: str,
    shards: int | None,
    workers: int | None,
    fail_fast: bool,
) -> None:
    """Build the bank: fetch, read, map and store datasets as Parquet under CONVBANK_HOME.

    With no NAMES, tries every dataset. Every dataset and config is tried, each committed on
    its own: the table shows each split built and each config skipped (its sources cannot be
    had) or failed (a bad source file: the bank keeps its previous content), with the reason
    of each on stderr. Exit code: the highest of the failures' (2 a bad source file, 1 a
    failed build...); with none failed, 3 when nothing was built, or when NAMES were given
    and one of their configs was skipped. The only config tried failing is its error alone.
    --fail-fast stops at the first failure (its error, after the table of what was built
    before it).

    \b
    Examples:
      convbank build casino curiosity pec --source ../shared/data
      convbank build ccpe curiosity --fail-fast
    """
    from convbank.build import BuildReport

    fetcher = fetcher_for(sources, no_verify)
    report = BuildReport()
    try:
        build_with_bars(names, config, fetcher, report, engine, master, shards, workers, fail_fast)
    except ConvbankError as exc:
        alone = not report.splits and not report.failures and len(report.errors) == 1
        if alone or not any(exc is e for e in report.errors.values()):  # or --fail-fast, the bank's own
            if report.splits:  # what was built before the failure, then the one-line error
                print_report(report)
            raise
    print_report(report)
    if report.errors:
        raise click.exceptions.Exit(report.exit_code)
    if not report.splits or (names and report.failures):
        raise click.exceptions.Exit(SourceError.exit_code)  # nothing built: the sources missing


def build_with_bars(
    names: Sequence[str],
    config: str | None,
    fetcher: Fetcher,
    report: BuildReport,
    engine: str,
    master: str,
    shards: int | None,
    workers: int | None,
    fail_fast: bool = False,
) -> None:
    """Run the build into ``report`` with a bar per split on a terminal's stderr (what
    :func:`convbank.build.build` raises, it raises: once every config was tried, or at the
    first failure with ``fail_fast``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from convbank import catalog, registry
    from convbank.build import build
    from convbank.cli._console import err
    from convbank.model import Part

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # no bar, and no stray blank line, when stderr is a file
    ) as bar:
        tasks: dict[tuple[str, str, str], Any] = {}

        def progress(dataset: str, cfg: str, split: str, n: int) -> None:
            key = (dataset, cfg, split)
            if key not in tasks:
                total = catalog.get(dataset).published_count(Part(cfg, split))
                tasks[key] = bar.add_task(f"{dataset}/{cfg}/{split}", total=total)
            bar.advance(tasks[key], n)

        from convbank.engines._checked import made_engine

        engine_type = registry.engines.get(engine)
        ctx = click.get_current_context()
        for option in ("master", "shards", "workers"):
            given = ctx.get_parameter_source(option) is not ParameterSource.DEFAULT
            if given and option not in getattr(engine_type, "options", (option,)):
                click.echo(f"warning: --{option} is not an option of the {engine} engine; ignored", err=True)
        runner = made_engine(engine, {"master": master, "shards": shards, "workers": workers})
        build(
            list(names) or None,
            config=config,
            fetcher=fetcher,
            progress=progress,
            engine=runner,
            report=report,
            fail_fast=fail_fast,
        )


def print_report(report: BuildReport) -> None:
    """The table of what was built, skipped and failed (stdout: a row per split built, one
    per config skipped or failed), then each skipped or failed config with its one-line
    reason and a count (stderr). The bank's path is a line of its own, never wrapped."""
    from rich.table import Table

    from convbank.cli._console import one_line, out, plural, visible

    table = Table()
    columns = ("dataset", "config", "split", "conversations", "participants", "turns", "annotations")
    for col in (*columns, "seconds", "status"):
        table.add_column(col, justify="right" if col in columns[3:] or col == "seconds" else "left")
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
            "built",
        )
    for status, parts in (("skipped", report.failures), ("failed", report.errors)):
        for part in parts:
            dataset, _, config = part.partition("/")
            table.add_row(dataset, config, "", "", "", "", "", "", status)
    if report.splits or report.errors:  # only skipped: their lines say it all
        click.echo(f"bank at {one_line(str(report.bank or bank_root()))}")
        out.print(table)
    for name, message in report.failures.items():
        click.echo(f"not built {name}: {visible(message, keep_newlines=False)}", err=True)
    for name, error in report.errors.items():
        click.echo(f"failed {name}: {visible(str(error), keep_newlines=False)}", err=True)
    summary = f"{plural(len(report.splits), 'split')} built in {report.seconds:.1f} s"
    if report.failures:
        summary += f", {plural(len(report.failures), 'config')} skipped"
    if report.errors:
        summary += f", {plural(len(report.errors), 'config')} failed"
    click.echo(summary, err=True)
