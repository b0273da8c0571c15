"""What an engine hands back, checked before the build writes any of it.

An engine (``convbank.engines``, possibly another package's) yields ``(split, tables)`` or
``(split, WrittenPiece)`` for each batch (:data:`convbank.engines.Batches`). Anything else
(not a pair, a split the config does not have, tables that are not the unified ones and the
dataset's raw table, of their schemas) is a one-line :class:`~convbank.errors.BuildError`
naming the engine, exit 1, before any of it reaches the staging folder: never a traceback
from the build's own code, nor a table written under a name of the engine's choosing. So are
a dataset's side tables (:func:`side_tables`), named as the dataset's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank.engines import Batches, Engine, WrittenPiece
from convbank.errors import BuildError

if TYPE_CHECKING:
    from convbank.datasets import Dataset

__all__ = ["checked_batches", "made_engine", "side_tables", "sql_answer"]

_SIDE = re.compile(r"[a-z0-9_]{1,64}")
"""What follows ``<dataset>_`` in a side table's name (``pec_personas``, ``curiosity_facts``)."""


def checked_batches(engine: Engine, batches: Any, ds: Dataset, config: str) -> Batches:
    """``batches`` (what ``engine.config_batches`` returned), each item checked as it comes
    (:func:`batch_problem`); the first wrong one, or a ``batches`` that is no iterable, is a
    :class:`BuildError` naming the engine and the config."""
    splits = list(ds.config(config).splits)
    try:
        items: Iterator[Any] = iter(batches)
    except TypeError:
        raise _wrong(engine, ds, config, f"{_kind(batches)} from config_batches, not batches") from None
    for item in items:
        problem = batch_problem(item, splits, ds)
        if problem is not None:
            raise _wrong(engine, ds, config, problem)
        yield item


def batch_problem(item: Any, splits: list[str], ds: Dataset) -> str | None:
    """What is wrong with one item an engine yielded, or None: it must be a pair of one of
    ``splits`` and either a :class:`WrittenPiece` of that split or tables by name, the
    unified ones (of their schemas, ``conversations`` among them) and ``<dataset>_raw``."""
    if not (isinstance(item, tuple) and len(item) == 2):
        return f"{_kind(item)}, not a (split, batch) pair"
    split, batch = item
    if not (isinstance(split, str) and split in splits):
        return f"a batch of split {_short(split)}, not one of the config's ({', '.join(splits)})"
    if isinstance(batch, WrittenPiece):
        return _piece_problem(batch, split, ds)
    return _tables_problem(batch, split, ds)


def _tables_problem(batch: Any, split: str, ds: Dataset) -> str | None:
    import pyarrow as pa

    from convbank.model.schema import table_schemas

    if not (isinstance(batch, dict) and all(isinstance(t, pa.Table) for t in batch.values())):
        return f"a batch of {split} that is {_kind(batch)}, not tables by name or a WrittenPiece"
    schemas = {**table_schemas(), f"{ds.name}_raw": ds.raw_schema}
    for name, table in batch.items():
        if name not in schemas:
            return f"a table named {_short(name)} in a batch of {split}, not one of {', '.join(schemas)}"
        if not table.schema.equals(schemas[name], check_metadata=False):
            return f"a {name} table in a batch of {split} not of the {name} schema"
    return None if "conversations" in batch else f"a batch of {split} without its conversations table"


def _piece_problem(piece: WrittenPiece, split: str, ds: Dataset) -> str | None:
    from convbank.model import UNIFIED_TABLES

    names = {*UNIFIED_TABLES, f"{ds.name}_raw", "records"}
    for key in piece.rows:
        if not (isinstance(key, tuple) and len(key) == 3 and key[0] in names and key[1] == split):
            return f"a written piece of {split} counting rows of {_short(key)}, not (table, {split!r}, piece)"
        if not (isinstance(key[2], int) and key[2] >= 0):
            return f"a written piece of {split} whose piece number is {_short(key[2])}"
    return None


def _wrong(engine: Engine, ds: Dataset, config: str, problem: str) -> BuildError:
    return BuildError(
        f"the code of {_origin(engine)} failed building {ds.name}/{config}: it handed back {problem}; "
        "nothing of it was kept — report it to its authors"
    )


def _origin(engine: Engine) -> str:
    """The engine's entry point (``entry point NAME = mod:Cls of group ...``), else its class."""
    from convbank import registry

    kind = type(engine)
    try:
        if registry.engines.get(engine.name) is kind:
            return registry.engines.origin(engine.name)
    except Exception:  # an engine handed to build() directly: its class names it
        pass
    return f"engine {kind.__module__}.{kind.__qualname__}"


def _kind(value: Any) -> str:
    """What a value is, said by its type: ``an int``, ``a tuple of 3``."""
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    size = f" of {len(value)}" if isinstance(value, (tuple, list, dict)) else ""
    return f"{article} {name}{size}"


def _short(value: Any) -> str:
    """A string as its repr (at most 40 characters), anything else as :func:`_kind`."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
    return _kind(value)


def side_tables(ds: Dataset, paths: Mapping[str, Path], config: str) -> Iterator[tuple[str, Any]]:
    """``ds.extra_tables(paths, config)``, each checked: a name ``<dataset>_<lowercase letters,
    digits, _>`` other than the raw table's, of a table. Anything else is a ``ValueError``
    (a plugin's fault, named by the build), never a table written over the bank's own files,
    its other tables or outside it."""
    import pyarrow as pa

    for item in ds.extra_tables(paths, config):
        name, table = item if isinstance(item, tuple) and len(item) == 2 else (item, None)
        prefix = f"{ds.name}_"
        own = isinstance(name, str) and name.startswith(prefix) and _SIDE.fullmatch(name[len(prefix) :])
        if not own or name == f"{ds.name}_raw":
            raise ValueError(
                f"extra_tables gave a side table named {_short(name)}; expected {prefix}<lowercase letters, "
                f"digits, _> other than {ds.name}_raw"
            )
        if not isinstance(table, pa.Table):
            raise ValueError(f"extra_tables gave {name} as {_kind(table)}, not a table")
        yield name, table


def made_engine(name: str, options: Mapping[str, Any]) -> Engine:
    """The registered engine ``name`` made by its ``from_options(options)``: what that gives
    must be an engine (a :class:`BuildError` naming the entry point, exit 1, if not: never
    ``None`` taken as the default engine, nor an ``AttributeError`` traceback later)."""
    from convbank import registry

    runner = registry.engines.get(name).from_options(options)
    if not isinstance(runner, Engine):
        origin = registry.engines.origin(name)
        raise BuildError(
            f"the code of {origin} failed: from_options gave {_kind(runner)}, not an engine; report it "
            "to its authors"
        )
    return runner


def sql_answer(name: str, result: Any) -> Any:
    """``result``, what the registered engine ``name``'s ``sql`` gave, if a table; else a
    :class:`BuildError` naming the entry point, exit 1 (never an ``AttributeError`` later)."""
    import pyarrow as pa

    from convbank import registry

    if not isinstance(result, pa.Table):
        raise BuildError(
            f"the code of {registry.engines.origin(name)} failed: sql gave a value of type "
            f"{type(result).__name__}, not a table; report it to its authors"
        )
    return result
