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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._atomic import plain_file
from convbank._wording import article, shown
from convbank._wording import counted as counted_
from convbank.engines import Batches, Engine, WrittenPiece
from convbank.errors import BuildError
from convbank.store.staging import Layout, MetaLayout

if TYPE_CHECKING:
    from convbank.datasets import Dataset, Part
    from convbank.store import Staging

Key = tuple[str, str, int]
"""A piece of a table: (table, split, piece number)."""
_FACTS: tuple[type | tuple[type, ...], ...] = (str, int, str, (Layout, MetaLayout, type(None)))
"""The types of :data:`~convbank.store.staging.Facts`' four values."""

__all__ = ["checked_batches", "made_engine", "mapped_problem", "records_problem", "side_tables", "sql_answer"]

_SIDE = re.compile(r"[a-z0-9_]{1,64}")
"""What follows ``<dataset>_`` in a side table's name (``pec_personas``, ``curiosity_facts``)."""


def checked_batches(
    engine: Engine, batches: Any, ds: Dataset, config: str, staging: Staging | None = None
) -> Batches:
    """``batches`` (what ``engine.config_batches`` returned), each item checked as it comes
    (:func:`batch_problem`); the first wrong one, or a ``batches`` that is no iterable, is a
    :class:`BuildError` naming the engine and the config. A :class:`WrittenPiece` must name
    files it wrote into ``staging``, each piece once."""
    splits = list(ds.config(config).splits)
    named: set[Key] = set()
    try:
        items: Iterator[Any] = iter(batches)
    except TypeError:
        raise _wrong(engine, ds, config, f"{_kind(batches)} from config_batches, not batches") from None
    for item in items:
        problem = batch_problem(item, splits, ds, staging, named)
        if problem is not None:
            raise _wrong(engine, ds, config, problem)
        if isinstance(item[1], WrittenPiece):
            named.update(item[1].rows)
        yield item


def batch_problem(
    item: Any, splits: list[str], ds: Dataset, staging: Staging | None = None, named: set[Key] | None = None
) -> str | None:
    """What is wrong with one item an engine yielded, or None: it must be a pair of one of
    ``splits`` and either a :class:`WrittenPiece` of that split (:func:`_piece_problem`) or
    tables by name, the unified ones (of their schemas, ``conversations`` among them) and
    ``<dataset>_raw``."""
    if not (isinstance(item, tuple) and len(item) == 2):
        return f"{_kind(item)}, not a (split, batch) pair"
    split, batch = item
    if not (isinstance(split, str) and split in splits):
        return f"a batch of split {_short(split)}, not one of the config's ({', '.join(splits)})"
    if isinstance(batch, WrittenPiece):
        return _piece_problem(batch, split, ds, staging, named or set())
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
            return f"{article(name)} table in a batch of {split} not of the {name} schema"
    return None if "conversations" in batch else f"a batch of {split} without its conversations table"


def _piece_problem(
    piece: WrittenPiece, split: str, ds: Dataset, staging: Staging | None, named: set[Key]
) -> str | None:
    """What is wrong with a written piece: its rows must count, by (table, ``split``, piece
    number: :func:`_count_problem`), files of the dataset's tables that are plain files in
    ``staging``, none named before; its ids the conversations it counts
    (:func:`_ids_problem`); its facts, those of its files (:func:`_facts_problem`)."""
    what = f"a written piece of {split}"
    if not isinstance(piece.rows, dict):
        return f"{what} whose rows are {_kind(piece.rows)}, not counts by (table, split, piece)"
    for key, count in piece.rows.items():
        problem = _count_problem(key, count, split, ds)
        if problem is not None:
            return f"{what} {problem}"
        table, _, number = key
        if key in named:
            return f"{what} naming {table} piece {number} again, a piece an earlier one named"
        if staging is not None and not plain_file(staging.path(*key)):
            return f"{what} naming {table} piece {number}, a file it did not write in the staging folder"
    return _ids_problem(piece, what) or _facts_problem(piece, what, staging)


def _count_problem(key: Any, count: Any, split: str, ds: Dataset) -> str | None:
    """What is wrong with one of a written piece's row counts (``key``: table, split, piece)."""
    from convbank.model import UNIFIED_TABLES

    tables = {*UNIFIED_TABLES, f"{ds.name}_raw", "records"}
    if not (isinstance(key, tuple) and len(key) == 3 and key[0] in tables and key[1] == split):
        return f"counting rows of {_short(key)}, not (table, {split!r}, piece)"
    if not (type(key[2]) is int and key[2] >= 0):
        return f"whose piece number is {_short(key[2])}"
    if not (type(count) is int and count >= 0):
        said = f"{shown(count, 40)}" if isinstance(count, (int, float, str)) else _kind(count)
        return f"counting {said} rows of {key[0]} piece {key[2]}, not a number of rows"
    return None


def _ids_problem(piece: WrittenPiece, what: str) -> str | None:
    """What is wrong with a written piece's ids (a list of strings) or, in their stead, their
    :func:`~convbank.engines.id_hashes` (eight bytes an id): one a conversation it counts."""
    if piece.hashes is not None:
        if not (isinstance(piece.hashes, bytes) and len(piece.hashes) % 8 == 0):
            said = (
                counted_(len(piece.hashes), "byte")
                if isinstance(piece.hashes, bytes)
                else _kind(piece.hashes)
            )
            return f"{what} whose id hashes are {said}, not eight bytes an id"
    elif not isinstance(piece.ids, list):
        return f"{what} whose ids are {_kind(piece.ids)}, not a list of conversation ids (strings)"
    elif odd := [i for i in piece.ids if not isinstance(i, str)][:1]:
        return f"{what} whose ids hold {_kind(odd[0])}, not only conversation ids (strings)"
    counted = sum(n for (table, _, _), n in piece.rows.items() if table == "conversations")
    if piece.conversations != counted:
        ids = counted_(piece.conversations, "conversation id")
        return f"{what} of {ids} counting {counted_(counted, 'conversation')}"
    return None


def _facts_problem(piece: WrittenPiece, what: str, staging: Staging | None) -> str | None:
    """What is wrong with a written piece's facts (None, or :data:`~convbank.store.staging.Facts`
    of pieces it counts, each of the file's size)."""
    if piece.facts is None:
        return None
    if not isinstance(piece.facts, dict):
        return f"{what} whose facts are {_kind(piece.facts)}, not facts by (table, split, piece)"
    facts: Any
    for key, facts in piece.facts.items():
        if key not in piece.rows:
            return f"{what} giving facts of {_short(key)}, a piece it does not count"
        if not (
            isinstance(facts, tuple)
            and len(facts) == 4
            and all(isinstance(v, t) for v, t in zip(facts, _FACTS, strict=True))
        ):
            said = f"{key[0]} piece {key[2]} are {_kind(facts)}"
            return f"{what} whose facts of {said}, not (sha256, size, footer, layout)"
        size = staging.path(*key).lstat().st_size if staging is not None else facts[1]
        if facts[1] != size:
            said = counted_(facts[1], "byte")
            return f"{what} saying {key[0]} piece {key[2]} is {said}, not the {size:,} it holds"
    return None


def records_problem(records: Any) -> str | None:
    """What is wrong with what a dataset's ``read`` (or ``read_shard``) gave, or None: it
    must be records, an iterable (an iterator, a list...), not a string or bytes."""
    if isinstance(records, Iterable) and not isinstance(records, (str, bytes, dict)):
        return None
    return f"its reader gave {_kind(records)}, not records (an iterator or a list)"


def mapped_problem(ds: Dataset, records: list[Any], part: Part, start: int, tables: Any) -> str | None:
    """What is wrong with what ``ds.map_batch(records, part, start)`` gave, or None: the
    unified tables and the raw table (:func:`_tables_problem`), one conversation a record,
    each of the id its ``conversation_id(record, part, index)`` gives, a string (the id the
    bank holds, its records, exports and ``show`` name)."""
    problem = _tables_problem(tables, part.split, ds)
    if problem is not None:
        return f"map_batch gave {problem}"
    ids = tables["conversations"].column("conversation_id").to_pylist()
    if len(ids) != len(records):
        gave = f"{counted_(len(ids), 'conversation')} for {counted_(len(records), 'record')}"
        return f"map_batch gave {gave} of {part.split}"
    for index, (record, mapped) in enumerate(zip(records, ids, strict=True), start):
        cid = ds.conversation_id(record, part, index)
        if not isinstance(cid, str):
            return f"conversation_id gave {_kind(cid)} for record {index} of {part.split}, not a string"
        if cid != mapped:
            return (
                f"conversation_id gave {_short(cid)} for record {index} of {part.split}, where its "
                f"to_conversation (map_batch) gave {_short(mapped)}"
            )
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
    size = f" of {len(value)}" if isinstance(value, (tuple, list, dict)) else ""
    return f"{article(type(value).__name__)}{size}"


def _short(value: Any) -> str:
    """A string as its repr (at most 40 characters), anything else as :func:`_kind`."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
    return _kind(value)


def side_tables(ds: Dataset, paths: Mapping[str, Path], config: str) -> Iterator[tuple[str, Any]]:
    """``ds.extra_tables(paths, config)``, each checked: a name ``<dataset>_<lowercase letters,
    digits, _>`` other than the raw table's and those given before, of a table. Anything else
    is a ``ValueError`` (a plugin's fault, named by the build), never a table written over the
    bank's own files, its other tables or outside it, nor two tables' rows in one."""
    import pyarrow as pa

    given: set[str] = set()
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
        if name in given:
            raise ValueError(f"extra_tables gave {name} twice; expected each side table once")
        given.add(name)
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
