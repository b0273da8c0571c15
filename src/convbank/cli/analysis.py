"""Commands that analyse the bank: ``validate``, ``stats``, ``report``, and the web viewer,
``serve`` (``bench`` is :mod:`convbank.cli.bench`)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from convbank.cli._options import limit_option, seconds_between
from convbank.errors import ServeError

# Each command imports rich, pyarrow and its engine when it runs (`convbank --help` does not).

__all__ = ["report", "serve", "stats", "validate"]


# ---------------------------------------------------------------------- quality
@click.command()
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
    from rich.table import Table
    from rich.text import Text

    from convbank.cli._console import echo_json, err, one_line, out, plural, visible
    from convbank.validate import validate as run_checks

    report = run_checks(list(names) or None)
    if as_json:
        echo_json(report.to_dict())
    else:
        table = Table("dataset", "check", "passed", "failed", "worst", title="validation")
        for c in report.checks:
            worst = Text(c.severity, style=_SEVERITY_STYLE[c.severity]) if c.severity else "-"
            table.add_row(visible(c.dataset), visible(c.name), f"{c.passed:,}", f"{c.failed:,}", worst)
        out.print(table)
        shown: dict[tuple[str, str], int] = {}
        for f in report.findings:
            key = (f.dataset, f.check)
            shown[key] = shown.get(key, 0) + 1
            if shown[key] <= limit:
                where = f" {f.conversation_id}" if f.conversation_id else ""
                head = Text(f.severity, style=_SEVERITY_STYLE[f.severity])
                head.append(one_line(f" {f.dataset}{where} {f.check}: "))  # a plugin's text forges no line
                out.print(Text.assemble(head, one_line(f.message)), highlight=False)
        for (dataset, name), n in shown.items():
            if n > limit:
                out.print(one_line(f"... {n - limit:,} more {dataset} {name} findings (--limit or --json)"))
        counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "warning", "info")}
        err.print(", ".join(plural(n, s) for s, n in counts.items()), highlight=False)
    if not report.ok:
        raise click.exceptions.Exit(1)


_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


@click.command()
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {dataset: {title, splits: [...], ...}}.")
def stats(names: Sequence[str], as_json: bool) -> None:
    """Describe built datasets in numbers (default: all built): per split, conversations,
    participants, turns, words, turns per conversation, labels per annotation layer and the
    key metadata each dataset declares (outcomes, ratings, likes, persona sizes...), then
    each dataset's cross-tabs."""
    from rich.table import Table

    from convbank.cli._console import cell, echo_json, one_line, out, visible
    from convbank.stats import stats as compute

    data = compute(list(names) or None)
    if as_json:
        echo_json(data)
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
            title=one_line(f"{name}: {ds['title']}"),
        )
        for s in ds["splits"]:
            tpc = s["turns_per_conversation"]
            table.add_row(
                visible(s["config"]),
                visible(s["split"]),
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
            table = Table(
                *map(visible, t["columns"]), title=visible(t["title"]), caption=visible(t["question"])
            )
            for row in t["rows"]:
                table.add_row(*(f"{v:.2f}" if isinstance(v, float) else visible(cell(v)) for v in row))
            out.print(table)


def _print_counts(title: str, counts: dict[str, int]) -> None:
    from rich.text import Text

    from convbank.cli._console import one_line, out

    total = sum(counts.values()) or 1
    body = ", ".join(f"{k or '(empty)'} {n:,} ({100 * n / total:.1f}%)" for k, n in counts.items())
    out.print(Text.assemble((one_line(title), "bold"), ": ", one_line(body)), highlight=False)


@click.command()
@click.argument("names", nargs=-1)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="HTML file to write (replaced if it exists, once the new one is complete).",
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
    from convbank.cli._console import one_line
    from convbank.report import write_report

    written = write_report(output, list(names) or None, validate=run_checks)
    click.echo(one_line(str(written)))  # a path's ESC drives no terminal, its newline breaks no line


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port.")
@click.option(
    "--allow-host",
    "extra_hosts",
    multiple=True,
    metavar="NAME",
    help="Another Host name to answer to (repeatable; default: loopback names and --host). "
    "Requests naming any other host are refused, which stops DNS-rebinding pages.",
)
@click.option(
    "--query-timeout",
    callback=seconds_between(0.1, 86_400),
    metavar="SECONDS",
    default="10",
    show_default=True,
    help="Seconds a SQL console query (or a listing) may run.",
)
@click.option(
    "--query-memory",
    default="256MB",
    callback=limit_option,
    show_default=True,
    help="Memory one query may use (DuckDB units: 256MB, 1GB).",
)
def serve(host: str, port: int, extra_hosts: Sequence[str], query_timeout: float, query_memory: str) -> None:
    """Serve the read-only web viewer over the bank: catalog, dataset pages with charts and
    filters, conversations with their annotations, and a SQL console (needs convbank[web]).

    Each SQL query runs on its own connection that can read the bank's tables and nothing
    else, within --query-timeout and --query-memory; it is stopped when its client leaves.
    """
    import contextlib
    import signal
    from collections.abc import Iterator

    from convbank.cli._console import err
    from convbank.errors import require

    require("starlette", "web", "The web viewer")
    require("uvicorn", "web", "The web viewer")
    import uvicorn

    from convbank.web._server import exit_now, exit_soon, server_config
    from convbank.web.app import Limits, allowed_hosts, create_app

    app = create_app(
        hosts=allowed_hosts(host, extra_hosts),
        limits=Limits(query_seconds=query_timeout, query_memory=query_memory),
    )
    sock = _bound(host, port)
    shown = f"[{host}]" if ":" in host else host
    err.print(f"convbank viewer on http://{shown}:{sock.getsockname()[1]}/ (Ctrl+C to stop)", highlight=False)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            app.state.stop_queries()  # running queries end now, not after the grace period
            super().handle_exit(sig, frame)
            exit_soon()  # whoever is still connected

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn stops gracefully on SIGINT and SIGTERM; a SIGHUP (the terminal closed)
            # stops it the same way, not by an exception raised inside its event loop
            before = signal.signal(signal.SIGHUP, self.handle_exit)
            try:
                with super().capture_signals():
                    yield
            finally:
                signal.signal(signal.SIGHUP, before)
            if signal.SIGHUP in self._captured_signals:
                exit_now(signal.SIGHUP, None)

    config = server_config(app)  # a client has 5 s to send its headers (HeaderDeadline)
    for stop in (signal.SIGINT, signal.SIGTERM):
        # uvicorn shuts down gracefully, then re-raises the signal to the handler it found:
        # this one, so the exit status says "stopped"
        signal.signal(stop, exit_now)
    Server(config).run(sockets=[sock])


def _bound(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or a one-line :class:`ServeError` that says which
    to change: ``--port`` for a port in use or refused, ``--host`` for an address that is
    not this machine's or a name that does not resolve."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            reason, option = "is already in use", "--port"
        else:
            port_refused = exc.errno in (errno.EACCES, errno.EPERM)  # below 1024, not root
            reason, option = f"cannot be used ({exc.strerror})", "--port" if port_refused else "--host"
        raise ServeError(
            f"{host}:{port} {reason}; choose another with {option}", host=host, port=port
        ) from None
    return sock
