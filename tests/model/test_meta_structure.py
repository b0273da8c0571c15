"""The ``meta`` structure found in Python at build time is DuckDB's: on generated JSON values
of every kind and mix (a fixed seed), on the real data of every dataset in the bank, and as
the Arrow type ``json_transform`` gives; structures merge as their values would, and the text
the manifest keeps reads back as it was written."""

from __future__ import annotations

import json
import random
from typing import Any

import duckdb
import msgspec
import pyarrow as pa
import pytest

import convbank
from convbank.corpus._scan import known_schema
from convbank.corpus._source import meta_structure, stored_structure
from convbank.model import UNIFIED_TABLES
from convbank.model.structure import Structure, nameable
from convbank.store import Bank

KEYS = ["a", "b", "c", "A", "", "a.b", "é", "É", 'q"t']


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any kind, numbers at the edges of 64 bits among them."""
    kinds = ["null", "bool", "uint", "int", "big", "real", "str"] + (["arr", "obj"] * 2 if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "arr":
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == "obj":
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return {
        "null": None,
        "bool": rng.random() < 0.5,
        "uint": rng.choice([0, 1, 7, 2**63 - 1, 2**63, 2**64 - 1]),
        "int": rng.choice([-1, -(2**63)]),
        "big": rng.choice([2**64, -(2**63) - 1, 10**30]),
        "real": rng.choice([0.5, -2.25, 1e300]),
        "str": rng.choice(["x", "", "2018-01-01", "{}"]),
    }[kind]


def _metas(rng: random.Random) -> list[str]:
    """A ``meta`` column: objects, ``{}`` among them, sometimes of one shape with a few
    places of another (as a real dataset's are)."""
    shape = {k: _value(rng, 1) for k in rng.sample(KEYS, 3)}
    out = []
    for _ in range(rng.randrange(1, 12)):
        if rng.random() < 0.2:
            out.append("{}")
        elif rng.random() < 0.5:
            out.append(json.dumps(shape))
        else:
            out.append(json.dumps({rng.choice(KEYS): _value(rng, 1) for _ in range(rng.randrange(1, 4))}))
    return out


_CON = duckdb.connect(config={"threads": 1})


def _duckdb(values: list[str], *, signed: bool = True) -> str | None:
    """DuckDB's structure of a meta column, as :func:`~convbank.corpus._source.meta_structure`
    finds it (for a bank written before structures were kept), on one connection
    (``signed=False``: DuckDB's own, ``UBIGINT`` kept)."""
    _CON.register("m", pa.table({"meta": pa.array(values, pa.string())}))
    try:
        found = _CON.sql("SELECT json_group_structure(meta::JSON) FROM m WHERE meta <> '{}'").fetchall()[0][0]
    finally:
        _CON.unregister("m")
    if found in (None, "{}", "null", "NULL"):
        return None
    text = msgspec.json.encode(nameable(json.loads(found))).decode()
    return text.replace('"UBIGINT"', '"BIGINT"') if signed else text


def _has_unsigned(value: Any) -> bool:
    """Whether a decoded JSON value holds an integer from 2**63 to 2**64 - 1."""
    if isinstance(value, dict):
        return any(_has_unsigned(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_unsigned(v) for v in value)
    return type(value) is int and 2**63 <= value < 2**64


def _unordered(text: str | None) -> Any:
    """A structure's text with its keys sorted (where only the types are compared)."""
    return None if text is None else json.loads(json.dumps(json.loads(text), sort_keys=True))


def test_the_structure_of_generated_values_is_duckdbs() -> None:
    """2,000 generated columns (a fixed seed): DuckDB's structure on one thread, keys in the
    same order, every one (with DuckDB's objects it cannot type as JSON, :func:`nameable`)."""
    rng = random.Random(2026)
    differ = []
    for _ in range(2000):
        values = _metas(rng)
        found = Structure.of(values)
        duck = None if found.empty() else msgspec.json.encode(found.duck()).decode()
        signed = not any(_has_unsigned(json.loads(v)) for v in values)
        if duck != _duckdb(values, signed=False) or (signed and found.text() != _duckdb(values)):
            differ.append(values)
    assert differ == []


def test_keys_are_in_the_order_first_seen() -> None:
    found = Structure.of(['{"b": 1}', '{"a": {"y": 1}}', '{"c": 1, "b": 2, "a": {"x": 1, "y": 2}}'])
    assert found.text() == '{"b":"BIGINT","a":{"y":"BIGINT","x":"BIGINT"},"c":"BIGINT"}'


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "-1"], '"HUGEINT"'),
        (["1", "1.5"], '"DOUBLE"'),
        (["1", "true"], '"JSON"'),
        (['"x"', "null"], '"VARCHAR"'),
        (["18446744073709551616"], '"DOUBLE"'),
        (["9223372036854775807"], '"BIGINT"'),
        (["9223372036854775808"], '"UBIGINT"'),
        (["1", "18446744073709551615"], '"UBIGINT"'),
        (["-1", "18446744073709551615"], '"HUGEINT"'),
        (["[]"], '["NULL"]'),
        (['{"a": {}}'], '{"a":"JSON"}'),
        (['{"a": {}}', '{"a": {"b": 1}}'], '{"a":{"b":"BIGINT"}}'),
        (['{"a": [1]}', '{"a": {"x": 1}}'], '{"a":"JSON"}'),
        (['{"a": null}'], '{"a":"NULL"}'),
    ],
)
def test_the_rules_at_the_edges(values: list[str], expected: str) -> None:
    """Each rule of the module's doc, beside DuckDB's answer for the same values."""
    wrapped = [f'{{"v": {v}}}' for v in values]
    text = Structure.of(wrapped).text()
    assert text == f'{{"v":{expected}}}'
    duckdb_says = _duckdb(wrapped, signed="UBIGINT" not in expected)
    assert _unordered(text) == _unordered(duckdb_says)


def test_merged_structures_are_those_of_the_values_together() -> None:
    rng = random.Random(7)
    for _ in range(500):
        first, second = _metas(rng), _metas(rng)
        merged = Structure.loads(Structure.of(first).dumps()).merged(Structure.of(second))
        assert merged == Structure.of(first + second)
        assert merged.text() == Structure.of(first + second).text()


def test_the_arrow_type_is_json_transforms() -> None:
    """:meth:`Structure.arrow_type` against the type DuckDB gives the values it types."""
    rng = random.Random(11)
    con = _CON
    checked = 0
    for _ in range(300):
        values = _metas(rng)
        structure = Structure.of(values)
        text = structure.text()
        if text is None:
            assert structure.arrow_type() == pa.struct([])
            continue
        con.register("t", pa.table({"meta": pa.array(values, pa.string())}))
        typed = con.sql("SELECT json_transform(meta, $s) AS meta FROM t", params={"s": text}).to_arrow_table()
        con.unregister("t")
        assert typed.schema.field("meta").type == structure.arrow_type(), values
        checked += 1
    assert checked > 200


def test_integers_beyond_a_signed_64_bits_keep_their_values() -> None:
    """Non-negative integers from 2**63 to 2**64 - 1 are typed ``UBIGINT`` where they are
    (before: ``BIGINT``, which ``json_transform`` made null: ``{"big": 2**63}`` read back as
    ``{"big": None}`` from ``to_arrow``, ``to_polars`` and ``scan``), smaller ones stay
    ``BIGINT``, and with negative ones ``HUGEINT``; every value comes back as it was."""
    values = [
        '{"a": 9223372036854775808, "b": 1, "c": -1}',
        '{"a": 18446744073709551615, "b": 2, "c": 2**63}',
    ]
    values[1] = values[1].replace("2**63", str(2**63))
    structure = Structure.of(values)
    assert structure.text() == '{"a":"UBIGINT","b":"BIGINT","c":"HUGEINT"}'
    _CON.register("t", pa.table({"meta": pa.array(values, pa.string())}))
    try:
        typed = _CON.sql("SELECT json_transform(meta, $s) AS meta FROM t", params={"s": structure.text()})
        table = typed.to_arrow_table()
    finally:
        _CON.unregister("t")
    assert table.schema.field("meta").type == structure.arrow_type()
    assert [{k: int(v) for k, v in row.items()} for row in table.column("meta").to_pylist()] == [
        {"a": 2**63, "b": 1, "c": -1},
        {"a": 2**64 - 1, "b": 2, "c": 2**63},
    ]


@pytest.mark.parametrize(
    "text",
    ["", "{}", "[1]", '["float"]', '[["arr"]]', '[["obj", [["k"]]]]', '[["obj", [[1, []]]]]', "not json"],
)
def test_a_text_that_is_not_a_structure_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"^not a meta structure"):
        Structure.loads(text)


def test_the_structure_reads_back_as_written() -> None:
    rng = random.Random(3)
    for _ in range(200):
        found = Structure.of(_metas(rng))
        assert Structure.loads(found.dumps()) == found
        assert msgspec.json.decode(found.dumps()) == msgspec.json.decode(
            Structure.loads(found.dumps()).dumps()
        )


def test_every_dataset_keeps_duckdbs_structure_of_its_real_meta(built: Bank) -> None:
    """For every dataset the bank holds (the real CaSiNo and ConvAI2, the samples, the
    fixtures, the plugin's), each unified table: the structures its files keep, merged, are
    DuckDB's over every value of the column, and the manifest names them as the footers do."""
    checked = []
    with built.snapshot() as snapshot:
        for name in snapshot.manifest.datasets:
            for table in UNIFIED_TABLES:
                refs = snapshot.refs(table, name)
                stored = stored_structure(refs)
                assert stored is not None, (name, table)
                column = [snapshot.read_table(r, columns=["meta"]) for r in refs]
                assert stored.text() == meta_structure(column), (name, table)
                checked.append((name, table))
    assert len(checked) == 4 * len(snapshot.manifest.datasets) >= 24


@pytest.mark.parametrize("form", ["struct", "json"])
def test_scan_knows_its_schema_without_reading_a_file(built: Bank, form: str) -> None:
    """The schema of ``scan()`` of every unified table of every dataset, made from the
    model's columns, the manifest's structures and the declared types of the views (CaSiNo's
    deal counts), is ``to_polars()``'s, which types ``meta`` with DuckDB."""
    pytest.importorskip("polars")
    with built.snapshot() as snapshot:
        names = sorted(snapshot.manifest.datasets)
    for name in names:
        corpus = convbank.load(name)
        for table in UNIFIED_TABLES:
            known = known_schema(corpus, table, form)  # type: ignore[arg-type]
            assert known is not None, (name, table)
            assert (
                corpus.scan(table, meta=form).collect_schema() == corpus.to_polars(table, meta=form).schema
            ), (
                name,
                table,
            )
