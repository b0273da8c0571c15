"""``convbank query``: read-only SQL over the bank, streamed to the terminal or a pipe."""

from __future__ import annotations

import sys
from typing import BinaryIO

import click

from convbank.cli._options import Choice, SqlArgumentCommand, engine_options, seconds_option, size_option

__all__ = ["DEFAULT_QUERY_SECONDS", "query"]

DEFAULT_QUERY_SECONDS = 300.0
"""How long `convbank query` lets a query run unless told otherwise."""

SQL_LIMIT = 64 << 20
"""The most bytes of SQL read from ``--file`` or standard input (``/dev/zero`` is refused,
never read without end)."""


@click.command(cls=SqlArgumentCommand)
@click.argument("sql_text", metavar="[SQL]", required=False)
@click.option(
    "-f",
    "--file",
    "sql_file",
    type=click.File("rb"),
    default=None,
    help="Read the SQL from this file (UTF-8; '-': standard input, as `convbank query -` does).",
)
@click.option(
    "--format",
    "fmt",
    type=Choice(["table", "json", "ndjson", "csv"]),
    default="table",
    show_default=True,
    help="table: each statement's first and last rows, long cells cut; json: one array; ndjson: one "
    "object a line; csv (json, ndjson and csv stream the last statement's result whole). "
    "JSON columns (meta) are objects in json and ndjson.",
)
@click.option("--json", "as_json", is_flag=True, help="The same as --format json (as other commands say).")
@click.option(
    "--timeout",
    callback=seconds_option,
    metavar="SECONDS",
    default=None,
    help=f"Stop the query after this many seconds (exit 2; 0: never); then it runs in a child process "
    f"that is killed on time. Default: {DEFAULT_QUERY_SECONDS:g} s, held by DuckDB in this process.",
)
@click.option(
    "--memory-limit",
    callback=size_option,
    metavar="SIZE",
    default=None,
    help="Memory the query may use (512MB, 2GB; exit 2 past it; 0: no limit); then it runs in a child "
    "process whose address space is capped. Default: half this machine's memory, held by DuckDB.",
)
@click.option("--no-limits", is_flag=True, help="Lift the default time and memory limits.")
@click.option(
    "--max-rows",
    type=click.IntRange(min=0),
    default=40,
    show_default=True,
    help="Rows a table shows: the first and last half (0: all).",
)
@click.option(
    "--max-width",
    type=click.IntRange(min=0),
    default=None,
    help="Characters a table may span; whole columns past it are left out (0: no limit). "
    "Default: the terminal's width (no limit in a pipe).",
)
@click.option("--all", "show_all", is_flag=True, help="Show every row and column of a table.")
@engine_options(
    "duckdb",
    "duckdb: DuckDB in this process; spark: Spark SQL (convbank[spark]; meta is JSON text there); "
    "or an installed engine that runs SQL.",
)
def query(
    sql_text: str | None,
    sql_file: BinaryIO | None,
    fmt: str,
    as_json: bool,
    timeout: float | None,
    memory_limit: str | None,
    no_limits: bool,
    max_rows: int,
    max_width: int | None,
    show_all: bool,
    engine: str,
    master: str,
) -> None:
    """Run read-only SQL over the views conversations, participants, turns, annotations
    (all datasets) and <dataset>_raw (`convbank tables` lists them with their columns).

    The SQL is the argument, a file (--file), or standard input (`-`, or piped in with no
    argument). The query's connection can read the bank's tables and nothing else: no
    file, no setting, no write survives it, whatever the SQL says. SQL that starts with a
    dash (a `-- comment`) is taken as SQL. Ctrl-C stops it at once (exit 130).

    Example: convbank query "SELECT dataset, count(*) FROM turns GROUP BY 1" --format csv
    """
    from convbank.cli._console import FITTED, out
    from convbank.cli._signals import exit_soon_on_signals

    exit_soon_on_signals()  # it writes nothing: a signal ends it within a second, whatever DuckDB does
    text = _sql_text(sql_text, sql_file)
    fmt = "json" if as_json else fmt
    if show_all:
        max_rows, max_width = 0, 0
    if max_width is None:
        max_width = out.size.width if FITTED else 0
    from convbank.cli._results import write_results

    if engine != "duckdb":
        from convbank.engines import SqlEngine
        from convbank.engines._checked import made_engine, sql_answer
        from convbank.store.bank import Bank
        from convbank.store.sql import Begin

        runner = made_engine(engine, {"master": master})
        if not isinstance(runner, SqlEngine):
            raise click.BadParameter(f"the {engine} engine does not run SQL", param_hint="--engine")
        result = sql_answer(engine, runner.sql(text, bank=Bank()))
        write_results(
            [Begin(result.schema, 0, 1), *result.to_batches()], fmt, max_rows=max_rows, max_width=max_width
        )
        return
    from convbank.errors import QueryError
    from convbank.store.queries import stream

    hard = bool(timeout) or bool(memory_limit and memory_limit != "0")
    defaults = []
    if not no_limits:
        if timeout is None:
            timeout, defaults = DEFAULT_QUERY_SECONDS, ["--timeout SECONDS"]
        if memory_limit is None:
            memory_limit, defaults = _default_memory(), [*defaults, "--memory-limit SIZE"]
    items = stream(
        text,
        timeout=timeout or None,
        memory_limit=None if memory_limit == "0" else memory_limit,
        hard=hard,
        last_only=fmt != "table",
    )
    try:
        write_results(items, fmt, max_rows=max_rows, max_width=max_width)
    except QueryError as exc:
        limit = "time limit" in str(exc) or "more memory" in str(exc)
        if defaults and limit and not hard:
            raise QueryError(
                f"{exc} (a default of `convbank query`: {' or '.join(defaults)} or --no-limits lifts it)",
                sql=exc.sql,
                limit=exc.limit,
            ) from exc
        raise


def _default_memory() -> str:
    """Half this machine's memory, in DuckDB's units."""
    import os

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return f"{max(total // 2 // 2**20, 64)}MiB"


def _sql_text(argument: str | None, file: BinaryIO | None) -> str:
    if argument is not None and file is not None:
        raise click.UsageError("give the SQL as an argument or with --file, not both")
    where, path = "standard input", None
    if file is not None:
        name = str(getattr(file, "name", "-"))
        where = "standard input" if name in ("-", "<stdin>") else f"--file {name}"
        path = None if name in ("-", "<stdin>") else name
        data = _read_sql(file, where, path)
    elif argument == "-" or (argument is None and not sys.stdin.isatty()):
        data = _read_sql(sys.stdin.buffer, where, path)
    else:
        data = None
    if argument is None and not data:
        raise click.UsageError("give the SQL as an argument, with --file FILE, or '-' to read standard input")
    if data is None:
        return argument or ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from convbank.errors import QueryError

        raise QueryError(
            f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start:,}); "
            "save the SQL as UTF-8",
            path=path,
        ) from None


def _read_sql(stream: BinaryIO, where: str, path: str | None) -> bytes:
    """At most :data:`SQL_LIMIT` bytes of ``stream``; more is one line, exit 2."""
    data = stream.read(SQL_LIMIT + 1)
    if len(data) > SQL_LIMIT:
        from convbank.errors import QueryError

        raise QueryError(f"{where} holds over {SQL_LIMIT >> 20} MiB of SQL; give a shorter query", path=path)
    return data
