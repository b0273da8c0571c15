"""The build command's progress bars and its table of what was built."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from convbank.settings import bank_root

if TYPE_CHECKING:
    from convbank.build import BuildReport
    from convbank.fetch import Fetcher

__all__ = ["build_with_bars", "print_report"]


def build_with_bars(
    names: Sequence[str],
    config: str | None,
    fetcher: Fetcher,
    report: BuildReport,
    engine: str,
    master: str,
    shards: int | None,
    workers: int | None,
) -> None:
    """Run the build into ``report`` with a bar per split on a terminal's stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from convbank import catalog, registry
    from convbank.build import build
    from convbank.cli._console import err

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
                total = catalog.get(dataset).published_count(cfg, split)
                tasks[key] = bar.add_task(f"{dataset}/{cfg}/{split}", total=total)
            bar.advance(tasks[key], n)

        engine_type = registry.engines.get(engine)
        ctx = click.get_current_context()
        for option in ("master", "shards", "workers"):
            given = ctx.get_parameter_source(option) is not ParameterSource.DEFAULT
            if given and option not in getattr(engine_type, "options", (option,)):
                click.echo(f"warning: --{option} is not an option of the {engine} engine; ignored", err=True)
        runner = engine_type.from_options({"master": master, "shards": shards, "workers": workers})
        build(
            list(names) or None,
            config=config,
            fetcher=fetcher,
            progress=progress,
            engine=runner,
            report=report,
        )


def print_report(report: BuildReport) -> None:
    """The table of the splits built (stdout), then each failure and a count (stderr)."""
    from rich.table import Table

    from convbank.cli._console import out, plural

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
    click.echo(f"{plural(len(report.splits), 'split')} built in {report.seconds:.1f} s", err=True)
