"""The ``source`` export: the publisher's format and file names, rebuilt from the bank by
each dataset's mapper and writer — the proof that the bank is lossless. Where the build
measured a file's layout, the files come back byte for byte."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from convbank._atomic import plain_file
from convbank._wording import article, shown
from convbank.datasets._base import SideTable, UndeclaredError
from convbank.errors import QueryError
from convbank.export._format import Format

if TYPE_CHECKING:
    import pyarrow as pa

    from convbank.export._core import Selection
    from convbank.query import Corpus

__all__ = ["FORMAT", "export_source", "side_reader", "write_source"]


def export_source(corpus: Corpus, directory: Path) -> list[Path]:
    """Write every (config, split) of ``corpus`` in its publisher's format into ``directory``,
    then each config's files kept in side tables (:meth:`Dataset.write_side`)."""
    directory.mkdir(parents=True, exist_ok=True)
    dataset = corpus.dataset
    written: list[Path] = []
    configs: list[str] = []
    for part in corpus.parts():
        records = (dataset.from_conversation(c) for c in corpus.iter_part(*part))
        gave = dataset.write_source(records, part, corpus.file_meta(*part), directory)
        written += files_written(dataset.name, "write_source", gave, directory)
        if part.config not in configs:
            configs.append(part.config)
    for config in configs:
        gave = dataset.write_side(side_reader(corpus, config), config, directory)
        written += files_written(dataset.name, "write_side", gave, directory)
    return sorted(set(written))


def files_written(dataset: str, hook: str, gave: object, directory: Path) -> list[Path]:
    """What a dataset's ``write_source`` or ``write_side`` (``hook``) gave, checked where it is
    handed back: the files it wrote, each a plain file in ``directory``. Anything else is an
    :class:`~convbank.datasets._base.UndeclaredError` blaming the dataset (one line naming its
    plugin, exit 1), never a traceback from the export's listing, nor a file outside the
    export named as one of it."""
    if isinstance(gave, (str, bytes)) or not isinstance(gave, Iterable):
        raise UndeclaredError(
            f"{hook} gave {article(type(gave).__name__)}, not the files it wrote", dataset=dataset
        )
    files = []
    inside = os.path.abspath(directory)
    for item in gave:
        path = Path(os.path.abspath(item)) if isinstance(item, (str, os.PathLike)) else None
        if path is None or not path.is_relative_to(inside) or not plain_file(path):
            said = shown(os.fspath(item)) if path is not None else article(type(item).__name__)
            raise UndeclaredError(
                f"{hook} gave {said}, not a file it wrote in the export's folder", dataset=dataset
            )
        files.append(Path(item))
    return files


def side_reader(corpus: Corpus, config: str) -> SideTable:
    """Reads a side table of one config of the corpus's dataset from the bank (without the
    partition columns); None when the bank has no rows of it for that config."""

    def read(name: str) -> pa.Table | None:
        if name not in corpus.dataset.side_tables:
            raise KeyError(f"{corpus.dataset.name} has no side table {name!r}")
        try:
            table = corpus.sql(_rows_query(name, corpus.dataset.name, config))
        except QueryError:  # not built (a bank from before the table existed)
            return None
        keys = [c for c in ("dataset", "config", "split") if c in table.column_names]
        return table.drop_columns(keys) if table.num_rows else None

    return read


def _rows_query(table: str, dataset: str, config: str) -> str:
    """The SQL of a side table's rows of one dataset's config, each name quoted whatever it
    holds (a plugin's config ``x' OR '1'='1`` is a name, not SQL).

    >>> print(_rows_query("t", "d", "x'y"))
    SELECT * FROM "t" WHERE dataset = 'd' AND config = 'x''y'
    """
    return f"SELECT * FROM {_identifier(table)} WHERE dataset = {_text(dataset)} AND config = {_text(config)}"


def _identifier(name: str) -> str:
    """``name`` as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _text(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def write_source(selection: Selection, directory: Path) -> list[Path]:
    """The source export of the selection's corpus (whole: it takes no ``where``), as
    :func:`export_source` writes it."""
    return export_source(selection.corpus, directory)


FORMAT = Format(
    order=10,
    name="source",
    summary="the publisher's files, byte for byte under their published names (not renamed)",
    writes="the publisher's files under their published names, byte for byte (the proof of "
    "losslessness; see below)",
    read_with="the publisher's own code",
    writer=write_source,
    no_where="rebuilds whole files",
)
"""The ``source`` format: no plan, its paths are each dataset's (checked once written)."""
