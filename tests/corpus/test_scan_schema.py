"""``Corpus.scan`` knows its schema from the manifest and reads checked bytes with polars' own
reader: it imports neither DuckDB nor ``pyarrow.parquet`` for a query that does not type
``meta``, gives every row when a query keeps only the key columns, refuses a manifest whose
``meta`` structure differs from the files' (as every reader and ``doctor`` do), still reads a
bank written before structures were kept, and types ``meta`` objects DuckDB cannot make a
struct of (an empty key, keys alike but for case) as JSON text instead of failing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import convbank
from convbank.cli import cli
from convbank.errors import DamagedBankError
from convbank.model import UNIFIED_TABLES
from convbank.store import Bank
from testsupport import probe as run_probe

pl = pytest.importorskip("polars")


def test_a_scan_that_does_not_type_meta_imports_neither_duckdb_nor_parquet(casino_home: Bank) -> None:
    """The schema is the model's columns and the manifest's structures, the rows polars reads
    from bytes checked against the manifest: DuckDB (45 ms of imports) and ``pyarrow.parquet``
    (10-16 ms) load only for a query that types ``meta``."""
    probe = (
        "import sys, polars as pl, convbank; from convbank.store import Bank; "
        f"c = convbank.load('casino', bank=Bank({str(casino_home.root)!r})); "
        "lf = c.scan('turns'); print(lf.collect_schema()['meta'].__class__.__name__); "
        "q = lf.filter((pl.col('turn_index') >= 2) & pl.col('text').str.contains('(?i)water'));"
        "print(q.select('conversation_id').collect().height); "
        "print('duckdb' in sys.modules, 'pyarrow.parquet' in sys.modules); "
        "print(lf.filter(pl.col('meta').struct.field('task_data').is_not_null()).collect().height); "
        "print('duckdb' in sys.modules)"
    )
    printed = run_probe(probe)
    # the counts are those of DuckDB over the bank: `turn_index >= 2 AND regexp_matches(text,
    # '(?i)water')` and `json_extract(meta, '$.task_data') IS NOT NULL`
    assert printed == ["Struct", "4361", "False", "False", "2378", "True"]


@pytest.mark.parametrize("table", ["raw", *UNIFIED_TABLES])
def test_keeping_only_the_key_columns_keeps_every_row(casino_home: Bank, table: str) -> None:
    """Before: a scan of the raw table (or of a selection) that kept only ``split`` gave no
    row at all (its files' tables of no column lost their rows when put together)."""
    corpus = convbank.load("casino")
    few = corpus.select([5, 3, 5])
    for which in (corpus, few):
        expected = which.to_arrow(table).num_rows
        assert which.scan(table).select("split").collect().height == expected
        assert which.scan(table).select(pl.len()).collect().item() == expected
    valid = sum(1 for split in corpus.to_arrow(table).column("split").to_pylist() if split == "valid")
    assert corpus.scan(table).filter(pl.col("split") == "valid").select("config").collect().height == valid


def _edit_structure(bank: Bank, table: str, change: str) -> Path:
    manifest = json.loads(bank.manifest_path.read_text(encoding="utf-8"))
    entry = manifest["datasets"]["casino"]["configs"]["default"]["files"][table]["train"]
    entry["structure"] = entry["structure"].replace(*change.split("->"))
    bank.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    return bank.root / entry["path"]


@pytest.mark.parametrize("change", ['"issue2youget"->"issue2youXet"', '["str"]->["uint"]'])
def test_a_misstated_meta_structure_is_damage_never_a_column_typed_otherwise(
    casino_home: Bank, change: str
) -> None:
    """A key renamed or a kind changed in the manifest's structure of the train turns would
    type ``meta`` otherwise (a column of nulls, strings cast to numbers): every reader refuses
    it naming the file, and ``doctor`` names it, exit 4."""
    path = _edit_structure(casino_home, "turns", change)
    expected = (
        f"the bank is damaged: {path} is corrupt (its meta structure differs from the manifest's); run "
        "`convbank doctor` to check every file, then `convbank build casino` to rebuild it"
    )
    corpus = convbank.load("casino")
    for read in (
        lambda: corpus.to_arrow("turns"),
        lambda: corpus.scan("turns").select("text").collect(),
        lambda: corpus.scan("turns").collect(),
    ):
        with pytest.raises(DamagedBankError) as info:
            read()
        assert str(info.value) == expected
    done = CliRunner().invoke(cli, ["doctor", "--quick"])
    assert done.exit_code == 4, done.output
    assert f"{path}: its meta structure differs from the one its footer holds" in done.output


@pytest.mark.parametrize("change", ['"strategy_slots"->"strategy_slotz"', '"uint"->"str"'])
def test_a_structure_misstated_for_a_split_not_read_is_damage_too(casino_home: Bank, change: str) -> None:
    """The train split's ``meta`` is typed from every split's structure (one type a dataset):
    before, a key renamed in the test split's entry gave the train turns' ``meta`` a field
    ``strategy_slotz`` of nulls more, and a kind changed made ``strategy_slots`` text, in
    ``to_arrow``, ``to_polars``, ``scan`` and ``turns_with_labels`` of the train split,
    without a word (the test file was never read, so never checked)."""
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    entry = manifest["datasets"]["casino"]["configs"]["default"]["files"]["turns"]["test"]
    entry["structure"] = entry["structure"].replace(*change.split("->"))
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    expected = (
        f"the bank is damaged: {casino_home.root / entry['path']} is corrupt (its meta structure "
        "differs from the manifest's); run `convbank doctor` to check every file, then "
        "`convbank build casino` to rebuild it"
    )
    for read in (
        lambda train: train.to_arrow("turns"),
        lambda train: train.to_polars("turns"),
        lambda train: train.scan("turns"),
        lambda train: train.scan("turns").collect(),
        lambda train: train.turns_with_labels(),
    ):
        with pytest.raises(DamagedBankError) as info:
            read(convbank.load("casino", split="train"))
        assert str(info.value) == expected
    train = convbank.load("casino", split="train")  # the stored text is no type: read on
    assert train.scan("turns", meta="json").select(pl.len()).collect().item() == 12_501


def test_a_bank_written_before_structures_were_kept_still_scans(casino_home: Bank) -> None:
    """Without the manifest's structures, ``meta`` is typed from the column by DuckDB (on one
    thread: keys in the order first seen), as it was: the same types, the same rows."""
    corpus = convbank.load("casino")
    kept = {t: corpus.scan(t).collect() for t in UNIFIED_TABLES}
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    for splits in manifest["datasets"]["casino"]["configs"]["default"]["files"].values():
        for entry in splits.values():
            entry.pop("structure", None)
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    older = convbank.load("casino")
    for table, frame in kept.items():
        again = older.scan(table).collect()
        assert again.height == frame.height
        assert again.schema == frame.schema, table
    assert older.scan("turns").filter(pl.col("kind") == "action").select("text").collect().height == 2378


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param(({"": 1}, {"b": 5}, {"A": 1, "a": 2}), id="empty-key-and-case-alike-keys"),
        pytest.param(({"a\x00b": 1}, {"a": 5}, {"a\x00": 1, "a": 2}), id="keys-holding-nul"),
    ],
)
def test_meta_objects_duckdb_cannot_type_stay_json_text(
    tmp_path: Path, objects: tuple[dict[str, int], ...]
) -> None:
    """Before: a message whose extra keys held an empty key, or keys alike but for case, made
    ``to_arrow``, ``to_polars`` and ``scan`` of the turns a DuckDB traceback ("Empty key in
    object in JSON structure", "Duplicate keys in object"); and (eleventh pass) DuckDB ends a
    struct's field name at a NUL, so ``{"a\\u0000b": 1}`` was typed ``struct<a: int64>`` and
    read back as ``{"a": 1}``, and ``{"a\\u0000": 1, "a": 2}`` as a struct of three fields
    named ``a`` (``to_pylist()`` a pyarrow ``ValueError``). Such objects are now their JSON
    text, the rest of ``meta`` typed as ever, in ``to_arrow``, ``to_polars`` and ``scan``."""
    first, second, third = objects
    chat = tmp_path / "odd.jsonl"
    lines = [
        {
            "messages": [
                {"role": "user", "content": "hi", "x": first},
                {"role": "assistant", "content": "yo", "x": second},
            ]
        },
        {"messages": [{"role": "user", "content": "hey", "x": third, "n": 3}]},
    ]
    chat.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    convbank.import_conversations(chat, name="odd", format="chat")
    corpus = convbank.load("odd")
    turns = corpus.to_polars("turns")
    assert turns.schema["meta"] == pl.Struct({"message": pl.Struct({"x": pl.String, "n": pl.Int64})})
    texts = [m["message"]["x"] for m in corpus.to_arrow("turns").column("meta").to_pylist()]
    assert texts == [json.dumps(o, separators=(",", ":")) for o in objects]
    assert [json.loads(m["message"]["x"]) for m in turns["meta"].to_list()] == list(objects)
    assert corpus.scan("turns").collect().equals(turns)
    assert corpus.to_polars("turns", flatten_meta=True).columns[-2:] == ["meta.message.x", "meta.message.n"]
    assert [t.meta for c in corpus for t in c.turns] == [
        {"message": {"x": first}},
        {"message": {"x": second}},
        {"message": {"x": third, "n": 3}},
    ]


def test_integers_at_the_64_bit_edges_are_read_back_exactly(tmp_path: Path) -> None:
    """Before: a message's ``2**63`` or ``2**64 - 1`` was typed ``BIGINT`` and read back as
    null by ``to_arrow``, ``to_polars`` and ``scan`` (``json_transform`` cannot fit it), and
    ``to_pandas`` made every integer of a field with nulls a float (``2**53 + 1`` came back as
    ``9007199254740992.0``, ``-2**63`` as ``-9.223372036854776e+18``)."""
    pytest.importorskip("pandas")
    chat = tmp_path / "edges.jsonl"
    extras = [{"big": 2**63}, {"big": 2**64 - 1, "odd": 2**53 + 1}, {"neg": -(2**63), "odd": None}]
    lines = [{"messages": [{"role": "user", "content": f"m{i}", **e}]} for i, e in enumerate(extras)]
    chat.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    convbank.import_conversations(chat, name="edges", format="chat")
    corpus = convbank.load("edges")
    expected = [
        {"big": 2**63, "odd": None, "neg": None},
        {"big": 2**64 - 1, "odd": 2**53 + 1, "neg": None},
        {"big": None, "odd": None, "neg": -(2**63)},
    ]
    polars = corpus.to_polars("turns")
    assert polars.schema["meta"] == pl.Struct(
        {"message": pl.Struct({"big": pl.UInt64, "odd": pl.Int64, "neg": pl.Int64})}
    )
    assert [m["message"] for m in polars["meta"].to_list()] == expected
    assert [m["message"] for m in corpus.to_arrow("turns").column("meta").to_pylist()] == expected
    assert corpus.scan("turns").collect().equals(polars)
    pandas = [m["message"] for m in corpus.to_pandas("turns")["meta"]]
    assert pandas == expected
    assert [type(v) for m in pandas for v in m.values() if v is not None] == [int, int, int, int]
    assert [t.meta for c in corpus for t in c.turns] == [{"message": e} for e in extras]


def test_flattened_meta_names_each_leaf_once(tmp_path: Path) -> None:
    """Before: ``{"a": {"b": 1}, "a.b": 2}`` flattened to two columns ``meta.message.a.b``
    (``to_arrow``; which was which could not be told) and ``to_polars(flatten_meta=True)`` was
    a polars ``DuplicateError`` traceback; a name holding a dot or a quote is now a JSON
    string in the path."""
    chat = tmp_path / "dots.jsonl"
    message = {"role": "user", "content": "hi", "a": {"b": 1}, "a.b": 2, 'q"': 3}
    chat.write_text(json.dumps({"messages": [message]}) + "\n", encoding="utf-8")
    convbank.import_conversations(chat, name="dots", format="chat")
    corpus = convbank.load("dots")
    leaves = ["meta.message.a.b", 'meta.message."a.b"', 'meta.message."q\\""']
    arrow = corpus.to_arrow("turns", flatten_meta=True)
    assert [n for n in arrow.column_names if n.startswith("meta.")] == leaves
    assert [arrow.column(n).to_pylist() for n in leaves] == [[1], [2], [3]]
    polars = corpus.to_polars("turns", flatten_meta=True)
    assert polars.select(leaves).rows() == [(1, 2, 3)]


def test_a_scan_holds_at_most_scan_bytes_of_files_at_once(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts beyond ``SCAN_BYTES`` of files are read once those before them are done: the
    same rows, in the same order, whatever the bound (here one part at a time)."""
    from convbank.corpus import _scan

    corpus = convbank.load("casino")
    whole = corpus.scan("turns").select("split", "conversation_id", "text").collect()
    monkeypatch.setattr(_scan, "SCAN_BYTES", 1)
    pieces = list(_scan.pieces(corpus, "turns", ["conversation_id", "text"], "struct"))
    assert len(pieces) == 3
    assert pl.concat([p.collect() for p in pieces]).select(whole.columns).equals(whole)
    assert corpus.scan("turns").select("split", "conversation_id", "text").collect().equals(whole)


def test_a_bank_that_records_no_file_digests_is_scanned_through_its_footers(casino_home: Bank) -> None:
    """A manifest without the files' sha256 (an earlier bank's): each file is read by the
    checking reader (footer against the manifest, every page against its CRC), the same rows."""
    whole = convbank.load("casino").scan("turns").select("conversation_id", "text").collect()
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    for splits in manifest["datasets"]["casino"]["configs"]["default"]["files"].values():
        for entry in splits.values():
            entry.pop("sha256", None)
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    assert convbank.load("casino").scan("turns").select("conversation_id", "text").collect().equals(whole)
