"""Options shared by several commands, and the error edge."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from convbank.fetch import Fetcher

F = TypeVar("F", bound=Callable[..., Any])

_OPTION_LIKE = re.compile(r"--?[A-Za-z][\w-]*(=.*)?", re.DOTALL)
"""What click may take for an option: a dash or two, then a name (``--format``, ``-h``,
``--format=csv``). SQL such as ``-- comment\\nSELECT 1`` is not."""


class SqlArgumentCommand(click.Command):
    """A command whose argument is SQL: an argument that starts with ``-`` but is neither one of
    the command's options nor shaped like one (``-- comment\\nSELECT 1``) is taken as the SQL.
    ``-`` alone and ``--`` keep their usual meaning; option typos still get click's error."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Move dash-led SQL behind ``--`` (with the other arguments, in order), then parse."""
        arity: dict[str, int] = {}
        for param in self.get_params(ctx):
            if isinstance(param, click.Option):
                takes = 0 if param.is_flag or param.count else param.nargs
                arity.update(dict.fromkeys([*param.opts, *param.secondary_opts], takes))
        return super().parse_args(ctx, _sql_behind_dashes(args, arity))


def _sql_behind_dashes(args: Sequence[str], arity: dict[str, int]) -> list[str]:
    """``args`` with the options first and the arguments behind ``--`` when an argument starts
    with a dash; unchanged otherwise. ``arity``: how many values each option name takes."""
    options: list[str] = []
    arguments: list[str] = []
    moved = False
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if arg == "--":
            arguments.extend(args[i + 1 :])
            break
        if name in arity:
            takes = 0 if "=" in arg else arity[name]
            options.extend(args[i : i + 1 + takes])
            i += 1 + takes
            continue
        if arg != "-" and _OPTION_LIKE.fullmatch(arg):
            options.append(arg)  # an unknown option: click says so
        else:
            moved = moved or (arg.startswith("-") and arg != "-")
            arguments.append(arg)
        i += 1
    return [*options, "--", *arguments] if moved else list(args)


def _existing_sources(
    ctx: click.Context, param: click.Parameter, value: tuple[Path, ...]
) -> tuple[Path, ...]:
    """Warn on stderr about each ``--source`` folder that does not exist; stop with exit code 2
    when none of them does, or when one is there but no folder (a FIFO, a device)."""
    import os.path

    from convbank.cli._console import say

    for path in value:  # a FIFO or a device: click's check refuses only a regular file
        if os.path.exists(path) and not os.path.isdir(path):
            say(f"error: source folder {path} is not a folder; check the --source path")
            ctx.exit(2)
    missing = [p for p in value if not os.path.exists(p)]  # nor can one be: a name too long
    if missing and len(missing) == len(value):
        if len(missing) == 1:
            say(f"error: source folder {missing[0]} does not exist; check the --source path")
        else:
            listed = ", ".join(str(p) for p in missing)
            say(f"error: none of the source folders exist: {listed}; check the --source paths")
        ctx.exit(2)
    for path in missing:
        say(f"warning: source folder {path} does not exist")
    return value


def source_options(func: F) -> F:
    """``--source DIR`` (repeatable; a missing folder is a warning, all missing an error) and
    ``--no-verify``."""
    func = click.option(
        "--no-verify",
        is_flag=True,
        help="Do not check the sha256 of local source files.",
    )(func)
    func = click.option(
        "--source",
        "sources",
        multiple=True,
        type=click.Path(file_okay=False, path_type=Path),
        callback=_existing_sources,
        help="Folder holding source files under their published names (directly or in a "
        "subfolder named after the dataset). Repeatable; also CONVBANK_SOURCE (a path list).",
    )(func)
    return func


def config_option(func: F) -> F:
    """``--config C``."""
    return click.option("--config", "-c", default=None, help="Config name (default: all stored configs).")(
        func
    )


def split_option(func: F) -> F:
    """``--split S``."""
    return click.option("--split", "-s", default=None, help="Split name (default: every split).")(func)


def engine_options(default: str, help_text: str) -> Callable[[F], F]:
    """``--engine NAME`` (``default`` unless given; the names are the registry's, checked
    when the command runs) and ``--master`` (a Spark master URL)."""

    def decorate(func: F) -> F:
        func = click.option(
            "--master", default="local[*]", show_default=True, help="Spark master URL (--engine spark)."
        )(func)
        return click.option("--engine", default=default, show_default=True, help=help_text)(func)

    return decorate


def seconds_option(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """A click callback: a finite number of seconds, 0 or more (``nan``, ``inf`` and
    negatives refused with one line, exit 2); None stays None."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or seconds > 366 * 86_400:
        raise _bad(param, f"{_shown(value)} is not a number of seconds from 0 to a year")
    return seconds


def seconds_between(low: float, high: float) -> Callable[[click.Context, click.Parameter, Any], float]:
    """A click callback: a number of seconds from ``low`` to ``high`` (``nan``, ``inf`` and
    anything outside refused with one line, exit 2)."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = math.nan
        if not (math.isfinite(seconds) and low <= seconds <= high):
            raise _bad(param, f"{_shown(str(value))} is not a number of seconds from {low:g} to {high:g}")
        return seconds

    return check


def size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: a memory size such as ``512MB``, checked at once (one line, exit 2);
    zero in any unit (``0``, ``0MB``) is ``"0"``: no limit."""
    if value is None:
        return None
    from convbank.store.sandbox import parse_size

    try:
        return value if parse_size(value) else "0"
    except ValueError as exc:
        raise _bad(param, str(exc)) from None


def limit_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: a memory size such as ``256MB`` that is always a limit (``serve
    --query-memory``): as :func:`size_option`, but zero, which would lift it, is refused."""
    size = size_option(ctx, param, value)
    if size == "0":
        raise _bad(
            param, "0 would lift the limit, which the viewer's queries always have; give a size such as 256MB"
        )
    return size


def folder_option(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A click callback: a folder to write into (its option of ``type=click.Path(file_okay=
    False)``, text), as a Path; never the empty path (``-o "$UNSET"``), which Path takes
    for the current folder: one line, exit 2 (``.`` names that one)."""
    from convbank._names import EMPTY_FOLDER

    if value == "":
        raise _bad(param, EMPTY_FOLDER)
    return None if value is None else Path(value)


def file_option(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A click callback: a file to write (its option of ``type=click.Path(dir_okay=False)``,
    text), as a Path; never the empty path (``--write-predictions "$UNSET"``), which Path
    takes for the current folder, nor one ending in a separator (``out.parquet/``), which
    names a folder and which Path would take for the file ``out.parquet``: one line, exit 2."""
    if value is None:
        return None
    if value in ("", "."):
        raise _bad(param, "is empty; name a file")
    if value.endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)):
        raise _bad(param, f"{_shown(value)} ends with a separator, so names a folder; name a file")
    return Path(value)


def _bad(param: click.Parameter, message: str) -> Exception:
    """One line on stderr and exit 2 (the error edge prints it): bad input for an option."""
    from convbank.errors import FormatError

    name = param.opts[0] if param.opts else str(param.name)
    return FormatError(f"{name}: {message}")


def _shown(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def fetcher_for(sources: Sequence[Path], no_verify: bool) -> Fetcher:
    """The fetcher of a command's ``--source`` folders and ``--no-verify`` (download bars on a
    terminal's stderr). Example: ``fetcher_for([Path("../shared/data")], False)``."""
    from convbank.cli._console import err
    from convbank.fetch import Fetcher

    return Fetcher(sources=list(sources), verify=not no_verify, progress=err.is_terminal)


class Choice(click.Choice):  # type: ignore[type-arg]
    """click's ``Choice`` whose error names the closest choices, as every name lookup of
    convbank does (:func:`convbank.errors.did_you_mean`). Example: ``--format hff`` says
    ``'hff' is not one of 'source', 'hf', ...; did you mean hf?``."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        """click's message, then the closest choices."""
        from convbank.errors import did_you_mean

        message = super().get_invalid_choice_message(value, ctx)
        hint = did_you_mean(value, [str(c) for c in self.choices]).rstrip()
        return f"{message.rstrip('.')}; {hint}" if hint else message


class LateChoice(Choice):
    """A :class:`Choice` whose choices are read when first needed (a value to check, a help
    page to show), not when the command line is imported: the export formats are a
    registry's, plugins included, which ``convbank --version`` never loads. Example:
    ``LateChoice(lambda: ["a", "b"])``."""

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self._names = names
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        """The names, read now."""
        return tuple(self._names())

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        """Set by ``click.Choice.__init__``; the names are read from the callable instead."""


class LateHelpOption(click.Option):
    """An option whose help text is made when a help page shows it (``help_text`` is called
    then). Example: ``click.option("--format", cls=LateHelpOption, help_text=lambda: "...")``."""

    def __init__(self, *args: Any, help_text: Callable[[], str], **kwargs: Any) -> None:
        self._help_text = help_text
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str:
        """The help, made now."""
        return self._help_text()

    @help.setter
    def help(self, value: str | None) -> None:
        """Set by ``click.Option.__init__``; the help is made by ``help_text`` instead."""
