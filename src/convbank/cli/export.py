"""``convbank export``: a built dataset in the formats other tools read, its ``--where``
query held to the time limit ``convbank query`` has."""

from __future__ import annotations

from pathlib import Path

import click

from convbank.cli._options import (
    LateChoice,
    LateHelpOption,
    config_option,
    folder_option,
    seconds_option,
    split_option,
)
from convbank.cli.query import DEFAULT_QUERY_SECONDS

__all__ = ["export"]


def _format_names() -> list[str]:
    """The export formats' names (the registry's, plugins included)."""
    from convbank.export._registry import written

    return written()


def _format_help() -> str:
    """``--format``'s help: each format's summary, as its :class:`~convbank.export.Format` says."""
    from convbank.export import formats

    return (
        "; ".join(f"{f.name}: {f.summary}" for f in formats if f.writer is not None)
        + ". Every other format's paths name the dataset, so that several datasets and formats share "
        "a folder; source's names are the publisher's."
    )


def _as_help() -> str:
    """``--as``'s help, naming the formats seen from one side."""
    from convbank.export._registry import joined, sided

    return (
        f"{joined(sided())}: the participant seen from (default: the dataset's choice, usually the "
        "assistant or bot side; the record's metadata says which)."
    )


@click.command()
@click.argument("name")
@config_option
@split_option
@click.option(
    "--format",
    "fmt",
    cls=LateHelpOption,
    type=LateChoice(_format_names),
    required=True,
    help_text=_format_help,
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    callback=folder_option,
    required=True,
    help="Folder to write into (created; files appear once complete). An export replaces only "
    "what the same export wrote there before.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace another export's files (or files convbank did not write) at the paths this "
    "export writes; without it, such a path is an error (exit 2).",
)
@click.option(
    "--where", default=None, help="SQL condition on the conversations view selecting what to export."
)
@click.option(
    "--timeout",
    callback=seconds_option,
    metavar="SECONDS",
    default=None,
    help=f"Stop the --where condition's query after this many seconds (exit 2; 0: never); then it runs "
    f"in a child process that is killed on time, as `convbank query --timeout` does. Default: "
    f"{DEFAULT_QUERY_SECONDS:g} s, held by DuckDB in this process.",
)
@click.option("--as", "as_participant", default=None, cls=LateHelpOption, help_text=_as_help)
def export(
    name: str,
    config: str | None,
    split: str | None,
    fmt: str,
    output: Path,
    where: str | None,
    timeout: float | None,
    as_participant: str | None,
    overwrite: bool,
) -> None:
    """Export a built dataset to the formats other tools read; prints the paths written.

    Example: convbank export convai2 --config volunteers --format chat --where
    "(meta->>'eval_score')::INT >= 4" -o out/
    """
    from convbank.cli._signals import sigterm_as_interrupt
    from convbank.errors import QueryError
    from convbank.export import export as run_export
    from convbank.query import load

    corpus = load(name, config, split)
    limit = DEFAULT_QUERY_SECONDS if timeout is None else timeout or None
    with sigterm_as_interrupt():  # SIGTERM removes the staging folder, as Ctrl-C does
        try:
            written = run_export(
                corpus,
                fmt,
                output,
                where=where,
                as_participant=as_participant,
                overwrite=overwrite,
                timeout=limit,
                hard=bool(timeout),  # given: held as `query --timeout` holds it
            )
        except QueryError as exc:  # the --where query ran past its time limit
            if timeout is None and exc.limit is not None:
                raise QueryError(
                    f"{exc} (a default of `convbank export`: --timeout SECONDS lifts it, 0: never)",
                    sql=exc.sql,
                    limit=exc.limit,
                ) from exc
            raise
    from convbank._controls import one_line

    for path in written:  # one line each, whatever the folder's name holds: its ESC drives no terminal
        click.echo(one_line(str(path)))
