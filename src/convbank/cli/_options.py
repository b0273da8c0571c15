"""Options shared by several commands, and the error edge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def source_options(func: F) -> F:
    """``--source DIR`` (repeatable) and ``--no-verify``."""
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


def engine_options(choices: tuple[str, str], help_text: str) -> Callable[[F], F]:
    """``--engine`` (first choice the default) and ``--master`` (Spark master URL)."""

    def decorate(func: F) -> F:
        func = click.option(
            "--master", default="local[*]", show_default=True, help="Spark master URL (--engine spark)."
        )(func)
        return click.option(
            "--engine",
            type=click.Choice(list(choices)),
            default=choices[0],
            show_default=True,
            help=help_text,
        )(func)

    return decorate
