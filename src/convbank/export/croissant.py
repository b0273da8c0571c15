"""``croissant``: the folder ``<dataset>_croissant/``: the unified tables as Parquet
(``<table>.parquet``) and ``croissant.json``, Croissant 1.1 JSON-LD describing them (fields
and types, licence, citation, sha256 of each file; every table's fields are its Parquet
file's columns, described from the model), built with ``mlcroissant`` (the
``croissant`` extra) so that it validates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from convbank._lazy import lazy
from convbank.errors import require
from convbank.export._core import Selection
from convbank.export._format import Format
from convbank.export.tables import write_parquet
from convbank.fetch import sha256_of
from convbank.model import schema

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy("pyarrow")
    pq = lazy("pyarrow.parquet")

__all__ = ["CONFORMS_TO", "FORMAT", "write_croissant"]

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
"""The Croissant version ``croissant.json`` declares (``conformsTo``): 1.1, whose vocabulary has
the ``isArray`` and ``arrayShape`` that list columns (a participant's ``persona``) are described
with (mlcroissant's default, 1.0, has neither)."""


def _description(table: str) -> str:
    """A table's description, from the model: its Struct's summary line and its columns."""
    model = schema.SCHEMA
    cls = model.conversation if table == "conversations" else model.children[table]
    summary = (cls.__doc__ or table).strip().splitlines()[0]
    columns = ", ".join(f"{c.name} (JSON)" if c.json else c.name for c in model.columns[table])
    return f"One row per {table[:-1]}. {summary} Columns: {columns}."


def _data_type(mlc: object, arrow: pa.DataType) -> object:
    types = mlc.DataType  # type: ignore[attr-defined]
    if pa.types.is_list(arrow):
        return _data_type(mlc, arrow.value_type)
    if pa.types.is_integer(arrow):
        return types.INTEGER
    if pa.types.is_floating(arrow):
        return types.FLOAT
    if pa.types.is_boolean(arrow):
        return types.BOOL
    return types.TEXT


def _folder(selection: Selection) -> list[str]:
    return [f"{selection.dataset}_croissant"]


def write_croissant(selection: Selection, directory: Path) -> list[Path]:
    """Write the folder ``{dataset}_croissant/``: the Parquet tables and ``croissant.json``
    describing them; return the folder."""
    require("mlcroissant", "croissant", "The Croissant export")
    import mlcroissant as mlc

    folder = directory / _folder(selection)[0]
    folder.mkdir()
    files = write_parquet(selection, folder, named=False)
    ds = selection.corpus.dataset
    distribution = []
    record_sets = []
    for path in files:
        table = path.stem
        distribution.append(
            mlc.FileObject(
                id=f"{table}-file",
                name=path.name,
                content_url=path.name,
                encoding_formats=["application/x-parquet"],
                sha256=sha256_of(path),
                description=_description(table),
            )
        )
        fields = []
        for field in pq.read_schema(path):
            is_list = pa.types.is_list(field.type)
            fields.append(
                mlc.Field(
                    id=f"{table}/{field.name}",
                    name=field.name,
                    data_types=[_data_type(mlc, field.type)],
                    is_array=is_list or None,
                    array_shape="-1" if is_list else None,
                    source=mlc.Source(file_object=f"{table}-file", extract=mlc.Extract(column=field.name)),
                )
            )
        record_sets.append(
            mlc.RecordSet(id=table, name=table, description=_description(table), fields=fields)
        )
    metadata = mlc.Metadata(
        name=f"convbank-{ds.name}",
        description=f"{ds.title}. {ds.description} Exported by convbank in its unified conversation model.",
        conforms_to=CONFORMS_TO,
        cite_as=ds.citation,
        license=[ds.license],
        url=ds.homepage,
        version=ds.version,
        distribution=distribution,
        record_sets=record_sets,
    )
    path = folder / "croissant.json"
    path.write_text(json.dumps(metadata.to_json(), indent=2, default=str), encoding="utf-8")
    return [folder]


FORMAT = Format(
    order=90,
    name="croissant",
    summary="Parquet plus Croissant JSON-LD (DIR/<dataset>_croissant)",
    writes="`DIR/<dataset>_croissant/`: the Parquet tables and `croissant.json` (fields, types, "
    "licence, citation, sha256)",
    read_with="`mlcroissant.Dataset`",
    writer=write_croissant,
    plan=_folder,
    extra="croissant",
    requires="mlcroissant",
)
"""The ``croissant`` format."""
