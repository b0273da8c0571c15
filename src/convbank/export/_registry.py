"""The export formats: the built-in ones (each declared by its module beside its writer), then
every entry point of the group ``convbank.formats`` (another package's formats: install it,
and ``convbank export --format`` takes them, its help lists them).

Loaded on first use (:data:`formats`), as :mod:`convbank.registry` loads datasets and
engines, with the same cheap pre-check of the installed packages' ``entry_points.txt``: an
entry point that cannot be imported, that is not a :class:`~convbank.export.Format`, or that
takes a name already registered (a built-in's included) is a one-line
:class:`~convbank.errors.PluginError` naming the entry point and its package. convbank's own
formats are the modules of :mod:`convbank.export` (those not starting with ``_``), each
declaring ``FORMAT`` or ``FORMATS``, found by listing the package, never through entry points,
so they load even where the installed metadata is stale; a built-in format is its module
alone. They are listed by each one's :attr:`~convbank.export.Format.order`, then name.

Importing this module imports every format's module, but none of their writers' libraries:
pyarrow, ``datasets`` and ``mlcroissant`` load when a writer runs.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Iterator
from typing import Any

from convbank.errors import PluginError
from convbank.export._format import Format
from convbank.registry import Registry, load_entry_points

__all__ = ["FORMAT_GROUP", "builtin", "formats", "joined", "read", "sided", "written"]

FORMAT_GROUP = "convbank.formats"
"""The entry-point group through which packages add export formats."""


def builtin() -> tuple[Format, ...]:
    """convbank's own formats, in the order the command line lists them: every public module
    of :mod:`convbank.export` declares its ``FORMAT`` (or several, ``FORMATS``).

    >>> [f.name for f in builtin()][:4]
    ['source', 'hf', 'convokit', 'parlai']
    """
    import convbank.export as package

    found: list[Format] = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        declared = getattr(module, "FORMATS", None) or (getattr(module, "FORMAT", None),)
        found.extend(f for f in declared if isinstance(f, Format))
    return tuple(sorted(found, key=lambda f: (f.order, f.name)))


def _format(value: Any, origin: str) -> Format:
    if not isinstance(value, Format):
        raise PluginError(f"{origin} is not a convbank.export.Format: {value!r}", origin=origin)
    return value


def _load_formats() -> Iterator[tuple[Format, str]]:
    for fmt in builtin():
        yield fmt, "convbank"
    for value, origin in load_entry_points(FORMAT_GROUP):
        yield _format(value, origin), origin


formats: Registry[Format] = Registry("format", load=_load_formats)
"""Every export format by name, the built-in ones first (``formats.get("chat").sided``)."""


def joined(names: Iterable[str]) -> str:
    """Names for a sentence: ``chat``, ``chat and parlai``, ``chat, parlai and tsv``.

    >>> joined(["chat", "parlai", "tsv"])
    'chat, parlai and tsv'
    """
    listed = list(names)
    return " and ".join([", ".join(listed[:-1]), listed[-1]] if len(listed) > 1 else listed)


def written() -> list[str]:
    """The names of the formats convbank writes (``export --format``), in the registry's order.

    >>> written()[:3]
    ['source', 'hf', 'convokit']
    """
    return [f.name for f in formats if f.writer is not None]


def read() -> list[str]:
    """The names of the formats convbank reads (``import --format``), in the registry's order."""
    return [f.name for f in formats if f.reader is not None]


def sided() -> list[str]:
    """The formats seen from one participant (``--as``), by name, in alphabetical order.

    >>> sided()
    ['chat', 'parlai', 'sharegpt']
    """
    return sorted(f.name for f in formats if f.sided)
