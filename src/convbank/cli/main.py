"""``convbank``: fetch, read, build, query and show conversational datasets."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from convbank import settings
from convbank._starting import commanding, received
from convbank._version import __version__
from convbank.cli._options import config_option, source_options, split_option
from convbank.cli._options import fetcher_for as _fetcher
from convbank.cli._signals import (
    EXIT_HUNG_UP,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    claim_exit,
    interrupted,
    last_exit,
    last_signal,
    message,
    new_command,
    settled,
    signal_of,
    signals_only,
    terminate_on_signals,
    watch_interrupts,
)
from convbank.errors import ConvbankError, ConversationNotFoundError, NotBuiltError, SourceError
from convbank.settings import bank_root, downloads_root, home

if TYPE_CHECKING:
    from convbank.fetch import Fetcher

# Each command imports what it needs (pyarrow, DuckDB, rich) when it runs, so that
# `--version`, `--help` and `where` start in a few hundredths of a second.


def _said_stopped(signum: int) -> int:
    """The signal's one line on stderr, unless the grace timer of
    :func:`convbank.cli._signals.exit_soon_on_signals` is ending the process already; its
    exit code (130, 143, 129)."""
    line, code = message(signum)
    if claim_exit():
        click.echo(line, err=True)
    return code


def _stopped(ctx: click.Context, signum: int) -> None:
    """:func:`_said_stopped`, then the command's exit with its code."""
    ctx.exit(_said_stopped(signum))


class ConvbankGroup(click.Group):
    """Turns convbank errors into one line on stderr and a non-zero exit code; so too any
    ``OSError`` (:func:`convbank._homefiles.os_error`): under ``CONVBANK_HOME`` (a read-only
    home, a file in place of a folder) a :class:`SetupError`, a full disk anywhere exit 1,
    another path (an export's folder in ``/proc``) the path and what the system said."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """click's, with a signal while the group's options are parsed said as in a command
        (click says ``Aborted!``, exit 1)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt as exc:
            raise click.exceptions.Exit(_said_stopped(signal_of(exc))) from None

    def invoke(self, ctx: click.Context) -> Any:
        """The command, its errors said in one line; a signal, wherever it lands (in the
        command, or while one of its errors is said), its line and exit code (before: one
        landing as a usage error was said, importing the console, was click's ``Aborted!``)."""
        try:
            new_command()
            return self._run(ctx)
        except KeyboardInterrupt as exc:  # Ctrl-C: queries interrupted, workers killed, staging dropped
            if ctx.params.get("debug"):
                raise
            _stopped(ctx, signal_of(exc))

    def _run(self, ctx: click.Context) -> Any:
        try:
            with signals_only():  # a KeyboardInterrupt that no signal sent is a fault
                return super().invoke(ctx)
        except BrokenPipeError:  # e.g. `convbank raw casino | head`
            sys.stderr.close()
            ctx.exit(0)
        except (KeyboardInterrupt, click.exceptions.Exit, click.exceptions.Abort):
            raise  # a signal, said by invoke; click's own ends: an exit code chosen
        except click.ClickException as exc:  # a usage error: one line whatever a path in it holds
            from convbank.cli._console import one_line_error  # rich: not for the commands that print

            raise one_line_error(exc) from None
        except BaseException as exc:  # a plugin's code may raise any (GeneratorExit)
            if interrupted.is_set() and not ctx.params.get("debug"):
                # whatever a signal interrupted failed with (a DuckDB call's RuntimeError "Query
                # interrupted", a worker's broken pipe, an error of ours) is the signal's doing
                _stopped(ctx, last_signal[0])
            if not isinstance(exc, (ConvbankError, OSError)):
                _blame_plugin(ctx, exc)
                raise
            from convbank._homefiles import os_error

            error = os_error(exc) if isinstance(exc, OSError) else exc
            if error is None or ctx.params.get("debug"):
                raise
            from convbank.cli._console import say, visible

            # DuckDB's LINE 1: ... ^ under its message, also in an error made of one (--where)
            if error.multiline or getattr(error.__cause__, "multiline", False):
                click.echo(f"error: {visible(str(error))}", err=True)  # data in it drives no terminal
            else:
                say(f"error: {error}")  # one line, whatever a path in it holds
            ctx.exit(error.exit_code)


def _blame_plugin(ctx: click.Context, exc: BaseException) -> None:
    """A plugin's own fault (:func:`~convbank.cli._faults.plugin_fault`): its one line, exit 1."""
    from convbank.cli._faults import plugin_fault

    if not ctx.params.get("debug") and (line := plugin_fault(exc)) is not None:
        from convbank.cli._console import say

        say(f"error: {line}")
        ctx.exit(1)


@click.group(cls=ConvbankGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="convbank")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """convbank: conversational datasets, fetched, read faithfully, stored as Parquet and
    queried with SQL.

    Data lives under CONVBANK_HOME (default: the user's cache folder); CONVBANK_OFFLINE=1
    forbids downloads; CONVBANK_SOURCE lists folders holding source files.

    Exit codes: 1 failure, 2 bad input, 3 sources unavailable, 4 not built or not found,
    5 CONVBANK_HOME unusable (read-only, a file in the way) or a bad CONVBANK_* setting.
    """
    settings.check()


# ---------------------------------------------------------------------- catalog
@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@source_options
def list_(as_json: bool, sources: Sequence[Path], no_verify: bool) -> None:
    """List the datasets: configs, splits and counts, licence, sources present, built."""
    from rich.table import Table

    from convbank import catalog
    from convbank.cli._console import echo_json, out, say
    from convbank.store.bank import Bank

    rows = catalog.listing(Bank().manifest(), _fetcher(sources, no_verify))
    if as_json:
        echo_json(rows)
        return
    table = Table(title="convbank datasets")
    for col in ("name", "title", "configs and splits", "license", "sources", "built"):
        table.add_column(col)
    for row in rows:
        configs = "\n".join(
            f"{c}: " + ", ".join(f"{s} {n:,}" if n is not None else s for s, n in splits.items())
            for c, splits in row["configs"].items()
        )
        present, total = row["sources"]["present"], row["sources"]["files"]
        sources_text = "all" if present == total else ("none" if present == 0 else f"{present}/{total}")
        if "error" in row["sources"]:  # a plugin whose code failed: said, and the others listed
            say(f"warning: {row['name']}: {row['sources']['error']}")
            sources_text = "?"
        table.add_row(
            row["name"], row["title"], configs, row["license"], sources_text, ", ".join(row["built"]) or "no"
        )
    out.print(table)


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@source_options
def info(name: str, as_json: bool, sources: Sequence[Path], no_verify: bool) -> None:
    """Show a dataset's card, configs, splits, files and checksum status."""
    from rich.table import Table
    from rich.text import Text

    from convbank import catalog
    from convbank.cli._console import echo_json, one_line, out, visible
    from convbank.store.bank import Bank

    ds = catalog.get(name)
    data = catalog.card(name, Bank().manifest(), _fetcher(sources, no_verify))
    if as_json:
        echo_json(data)
        return
    # a plugin's card: its one-line fields forge no line (the description and citation are prose)
    out.print(Text.assemble((one_line(ds.title), "bold"), one_line(f" ({ds.name}, version {ds.version})")))
    out.print(visible(ds.description))
    out.print(
        one_line(f"license: {ds.license}   homepage: {ds.homepage}   default config: {ds.default_config}"),
        markup=False,
    )
    if data["origin"] != "convbank":
        out.print(one_line(f"from: {data['origin']}"), markup=False)
    table = Table("config", "split", "conversations", title="configs")
    for cname, cfg in data["configs"].items():
        for split, n in cfg["splits"].items():
            table.add_row(cname, split, f"{n:,}" if n is not None else "?")
    out.print(table)
    files = Table("file", "sha256", "checksum", "present", title="source files")
    for entry in data["files"]:
        present = entry["present"] or "no"
        if entry["folder"]:
            present += " (a folder: used only with --no-verify)"
        files.add_row(entry["name"], entry["sha256"] or "-", entry["checksum"], present)
    out.print(files)
    views = data["examples"]
    out.print(
        f"example views: {', '.join(views['views'])}   "
        f"targets: {', '.join(views['targets']) or 'none'}   (corpus.examples(view, ...))",
        markup=False,
    )
    out.print("citation:", markup=False)
    out.print(ds.citation, markup=False, highlight=False, soft_wrap=True)  # copy-pastable BibTeX


@cli.command()
@click.argument("name")
@config_option
@source_options
def fetch(name: str, config: str | None, sources: Sequence[Path], no_verify: bool) -> None:
    """Download (or find locally) and verify a dataset's source files; prints each file's
    path, then every config whose files cannot be had (exit 3 if any). Files found in a
    --source folder are remembered: later commands find them without --source."""
    from convbank import catalog
    from convbank.build import source_paths
    from convbank.cli._console import one_line

    ds = catalog.get(name)
    fetcher = _fetcher(sources, no_verify)
    shown: set[str] = set()
    failures = []
    for cfg in dict.fromkeys(p.config for p in ds.parts(config)):
        try:
            paths = source_paths(ds, cfg, fetcher, private=False)
        except SourceError as exc:
            failures.append(f"not fetched {ds.name}/{cfg}: {exc}")
            continue
        for fname, path in paths.items():
            if fname not in shown:
                shown.add(fname)
                click.echo(f"{one_line(fname)}\t{one_line(str(path))}")  # a path's ESC drives no terminal
    from convbank.cli._console import say

    for line in failures:
        say(line)
    if failures:
        raise click.exceptions.Exit(SourceError.exit_code)


@cli.command()
@click.argument("name")
@config_option
@split_option
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="Print at most N records.")
@click.option("--from-source", is_flag=True, help="Read the source files even when the dataset is built.")
@source_options
def raw(
    name: str,
    config: str | None,
    split: str | None,
    limit: int | None,
    from_source: bool,
    sources: Sequence[Path],
    no_verify: bool,
) -> None:
    """Print the raw records of a dataset as JSON lines, exactly as published: from the bank
    when the dataset is built (the mapper rebuilds each record), else from its source files."""
    from convbank._textio import json_bytes

    write = sys.stdout.buffer.write
    for n, record in enumerate(_raw_records(name, config, split, _fetcher(sources, no_verify), from_source)):
        if limit is not None and n >= limit:
            break
        write(json_bytes(record) + b"\n")
    sys.stdout.flush()


def _raw_records(
    name: str, config: str | None, split: str | None, fetcher: Fetcher, from_source: bool
) -> Iterator[Any]:
    from convbank.build import read_raw
    from convbank.query import load

    if not from_source:
        try:
            corpus = load(name, config, split)
        except NotBuiltError:
            pass
        else:
            with corpus:
                for conversation in corpus:
                    yield corpus.dataset.from_conversation(conversation)
            return
    for _, _, record in read_raw(name, config, split, fetcher=fetcher):
        yield record


# ---------------------------------------------------------------------- bank
@cli.command()
@click.option("--columns", is_flag=True, help="Also list each view's columns and types.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tables(columns: bool, as_json: bool) -> None:
    """List the views `convbank query` offers, with their rows (and columns)."""
    from rich.table import Table

    from convbank.cli._console import echo_json, out, visible
    from convbank.query import describe

    views = describe()
    if as_json:
        echo_json(views)
        return
    table = Table("view", "rows", *(["columns"] if columns else []), title="views")
    for view in views:
        cols = ", ".join(f"{c['name']} {c['type']}" for c in view["columns"])
        table.add_row(visible(view["name"]), f"{view['rows']:,}", *([visible(cols)] if columns else []))
    out.print(table)


@cli.command()
@click.argument("name")
@click.argument("conversation_id")
@config_option
@split_option
@click.option("--json", "as_json", is_flag=True, help="Print the unified conversation as JSON.")
def show(name: str, conversation_id: str, config: str | None, split: str | None, as_json: bool) -> None:
    """Show one conversation: participants, turns, actions, annotations, outcomes."""
    from convbank.cli._console import echo_json, out
    from convbank.cli._render import render_conversation
    from convbank.query import load

    corpus = load(name, config, split)
    try:
        conv = corpus[conversation_id]
    except ConversationNotFoundError:
        if config is None and split is None:
            raise
        _raise_found_elsewhere(name, conversation_id, config, split)
        raise
    if as_json:
        echo_json(conv.to_dict())
    else:
        render_conversation(out, conv, corpus.context(conv))


def _raise_found_elsewhere(name: str, conversation_id: str, config: str | None, split: str | None) -> None:
    """When --config or --split left out a conversation the dataset has: say where it is."""
    from convbank.query import load

    try:
        with load(name) as everything:
            elsewhere = everything[conversation_id]
    except ConversationNotFoundError:
        return
    options = [("--config", config, elsewhere.config), ("--split", split, elsewhere.split)]
    wrong = [(option, right) for option, given, right in options if given is not None and given != right]
    drop = " and ".join(option for option, _ in wrong)
    use = " ".join(f"{option} {right}" for option, right in wrong)
    asked = "/".join(part or "*" for part in (name, config, split))
    raise ConversationNotFoundError(
        f"no conversation {conversation_id!r} in {asked}: it is in "
        f"{name}/{elsewhere.config}/{elsewhere.split}; drop {drop} or use {use}",
        dataset=name,
        conversation_id=conversation_id,
    )


@cli.command()
def where() -> None:
    """Print convbank's folders: home, downloads (the cache of fetched files) and bank, each
    on its line (a control character or a newline in a path shown as an escape, ``\\x1b``)."""
    from convbank._controls import one_line  # not rich: `where` starts in a blink

    for what, path in (("home", home()), ("downloads", downloads_root()), ("bank", bank_root())):
        click.echo(f"{what}\t{one_line(str(path))}")


from convbank.cli._build import build_ as build_command  # noqa: E402
from convbank.cli.analysis import report, serve, stats, validate  # noqa: E402
from convbank.cli.bench import bench  # noqa: E402
from convbank.cli.export import export  # noqa: E402
from convbank.cli.imports import import_, remove  # noqa: E402
from convbank.cli.query import query  # noqa: E402
from convbank.cli.upkeep import doctor, new_dataset  # noqa: E402

for _command in (
    build_command,
    import_,
    remove,
    query,
    validate,
    stats,
    report,
    bench,
    export,
    serve,
    doctor,
    new_dataset,
):
    cli.add_command(_command)


def _kept_after_signal(exc: SystemExit) -> None:
    """Raise ``exc``, the command's exit, unless a signal arrived whose exception never
    unwound it (CPython drops one raised in a weakref callback; click's own ends take one
    outside the command as ``Aborted!``): then the signal's line and exit code, so that a
    command stopped by a signal never exits 0 (before: 1 of 30 ``report`` runs Ctrl-C'd
    ran to their end, exit 0)."""
    if received and _exit_code(exc) not in (EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HUNG_UP):
        sys.exit(_said_stopped(received[-1]))
    raise exc


def main() -> None:
    """Console-script entry point."""
    received.clear()  # until now a signal ended the process at once (while_starting)
    commanding[0] = True  # from now on, a signal taken means nothing is committed
    ended: BaseException | None = None
    try:
        try:
            watch_interrupts()
            terminate_on_signals()  # a signal pending as the handler is set runs it here
            cli(prog_name="convbank")
        except KeyboardInterrupt as exc:  # before click's handling: as the handlers were set
            settled()
            sys.exit(_said_stopped(signal_of(exc)))
        except SystemExit as exc:
            settled()
            _kept_after_signal(exc)
    except KeyboardInterrupt as late:  # landed as cli()'s end was taken, before settled()
        ended = last_exit(late, _said_stopped)
        raise ended from None
    except BaseException as exc:  # its exit code (click's SystemExit), or what escaped
        ended = exc
        raise
    finally:
        settled()  # the command is over: a signal now cannot take its exit code
        # CPython remembers a KeyboardInterrupt that ended a string's exec (a dataclass's made
        # methods) though handled, and `python -m` ends by SIGINT: a string exec forgets it
        exec("")
        _unheld(ended)


def _exit_code(exc: SystemExit) -> int:
    """The process's exit status for ``exc``, as Python reads it: an int as it is, None 0,
    anything else (a message, printed) 1."""
    return exc.code if isinstance(exc.code, int) else int(exc.code is not None)


def _unheld(ended: BaseException | None) -> None:
    """End the process with the command's exit code now where a thread that is no daemon
    (a plugin's) is still running: the interpreter would wait for it for ever, the signals
    already ignored (:func:`settled`). The streams are flushed and the exit functions run
    first, as the interpreter would; with no such thread, nothing is done."""
    import atexit
    import contextlib
    import os
    import threading

    main_thread = threading.main_thread()
    if not any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    code = 0 if ended is None else 1
    if isinstance(ended, SystemExit):
        code = _exit_code(ended)
        if ended.code is not None and not isinstance(ended.code, int):
            print(ended.code, file=sys.stderr)
    elif ended is not None:
        sys.excepthook(type(ended), ended, ended.__traceback__)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)
