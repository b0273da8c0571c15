"""The ``convbank`` command line: a thin shell over the library.

The script's entry point, :func:`main`, stops on a signal from its first line: SIGINT, SIGTERM
or SIGHUP while the commands are still being imported ends it with the signal's one line and
exit code (nothing has been written yet), as one arriving later does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convbank._starting import stop_while_starting

if TYPE_CHECKING:
    from convbank.cli.main import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Console-script entry point: ``convbank`` and ``python -m convbank`` run it. Example:
    ``sys.argv = ["convbank", "list"]; main()``."""
    import sys

    stop_while_starting()
    from convbank.cli._memory import out_of_memory
    from convbank.cli._streams import ClosedOutputError, stand_in_for_closed_streams

    stand_in_for_closed_streams()  # started with 1>&- or 2>&-: said, never a traceback
    try:
        from convbank.cli.main import main as run

        run()
    except ClosedOutputError as exc:  # click's own --help or --version, before any command runs
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except (MemoryError, RuntimeError, ImportError) as exc:  # ulimit -v: one line, as ulimit -n
        line = out_of_memory(exc)
        if line is None or "--debug" in sys.argv[1:2]:
            raise
        print(f"error: {line}", file=sys.stderr)
        sys.exit(5)


def __getattr__(name: str) -> Any:
    """The click group, ``cli`` (``CliRunner().invoke(cli, ["list"])``), imported when asked
    for, so that the script's signal handlers are set before the commands are imported."""
    if name == "cli":
        from convbank.cli.main import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
