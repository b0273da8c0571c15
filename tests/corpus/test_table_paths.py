"""Every table path of a Corpus gives exactly the bank's rows for its selection (issue 30 item
7): the rows are computed here independently, from the whole tables as SQL reads them,
filtered by the selected ids; ``scan`` equals ``to_polars`` for every table; equality of
corpora is by content; unknown columns are one-line errors."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import convbank
from convbank import Corpus, UnknownFieldError
from convbank.store import Bank

KEYS: dict[str, tuple[str, ...]] = {
    "conversations": ("config", "split", "conversation_id", "num_turns", "source_index"),
    "participants": ("config", "split", "conversation_id", "participant_id", "role"),
    "turns": ("config", "split", "conversation_id", "turn_index", "participant_id", "text"),
    "annotations": ("config", "split", "conversation_id", "turn_index", "layer", "label", "start_char"),
}
"""What identifies a row of each unified table (and a few of its values)."""

SELECTIONS: dict[str, Callable[[Corpus], Corpus]] = {
    "label": lambda c: c.filter(label="strategy:uv-part"),
    "slice": lambda c: c[880:960:3],  # across train and valid
    "shuffle": lambda c: c.shuffle(seed=3)[:60],
    "repeats": lambda c: c.select([5, 1029, 5, 900, 0, 5, -1]),
    "split": lambda c: c.train_test_split(0.05, seed=1)["test"],
}


def _rows(table: pa.Table, keys: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return list(zip(*(table.column(k).to_pylist() for k in keys), strict=True))


class Bankwide:
    """The whole of CaSiNo's tables as SQL reads them, grouped by conversation: where the
    expected rows of a selection come from (no Corpus code involved)."""

    def __init__(self) -> None:
        self.by_conv: dict[str, dict[tuple[str, str, str], list[tuple[Any, ...]]]] = {}
        for name, keys in KEYS.items():
            table = convbank.sql(f"SELECT * FROM {name} WHERE dataset = 'casino'")  # stored order
            grouped: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
            for row in _rows(table, keys):
                grouped.setdefault(row[:3], []).append(row)
            self.by_conv[name] = grouped
        raw = convbank.sql("SELECT split, dialogue_id FROM casino_raw")
        self.raw = {(s, str(d)): d for s, d in _rows(raw, ("split", "dialogue_id"))}
        ordered = convbank.sql(  # source order: the splits as catalogued, then position in file
            "SELECT config, split, conversation_id FROM conversations WHERE dataset = 'casino' "
            "ORDER BY list_position(['train', 'valid', 'test'], split), source_index"
        )
        self.order = _rows(ordered, ("config", "split", "conversation_id"))

    def expected(self, name: str, items: list[tuple[str, str, str]]) -> list[tuple[Any, ...]]:
        """The rows of these conversations, in this order (repeats repeated)."""
        return [row for item in items for row in self.by_conv[name].get(item, [])]

    def source_order(self, items: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """These conversations in source order, each once."""
        chosen = set(items)
        return [item for item in self.order if item in chosen]


@pytest.fixture(scope="module")
def bankwide(docs_bank: Path) -> Bankwide:
    mp = pytest.MonkeyPatch()
    mp.setenv("CONVBANK_HOME", str(docs_bank))
    try:
        return Bankwide()
    finally:
        mp.undo()


@pytest.fixture
def casino(docs_bank: Path, monkeypatch: pytest.MonkeyPatch) -> Corpus:
    monkeypatch.setenv("CONVBANK_HOME", str(docs_bank))
    return convbank.load("casino")


def _items(selection: Corpus, whole: Bankwide) -> list[tuple[str, str, str]]:
    """The selection's (config, split, id) in its order, from its ids alone."""
    where = {cid: item for item in whole.order for cid in [item[2]]}
    assert len(where) == len(whole.order)  # CaSiNo's ids are unique across its splits
    return [where[cid] for cid in selection.conversation_ids()]


def _polars(corpus: Corpus, name: str) -> pa.Table:
    return corpus.to_polars(name).to_arrow()


def _pandas(corpus: Corpus, name: str) -> pa.Table:
    return pa.Table.from_pandas(corpus.to_pandas(name, meta="json"), preserve_index=False)


def _scan(corpus: Corpus, name: str) -> pa.Table:
    return corpus.scan(name).collect().to_arrow()


def _batches(corpus: Corpus, name: str) -> pa.Table:
    return pa.Table.from_batches(list(corpus.iter_batches(name, 100)))


TABLE_PATHS: dict[str, tuple[Callable[[Corpus, str], pa.Table], str]] = {
    "to_arrow": (lambda c, n: c.to_arrow(n), "corpus"),
    "to_polars": (_polars, "corpus"),
    "to_pandas": (_pandas, "corpus"),
    "scan": (_scan, "corpus"),
    "iter_batches": (_batches, "source"),  # streamed: source order, each conversation once
}
"""Table paths and the order they promise: the corpus's (with repeats) or the source's."""


@pytest.mark.parametrize("selection", sorted(SELECTIONS))
@pytest.mark.parametrize("path", sorted(TABLE_PATHS))
@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_table_path_gives_the_selections_rows(
    casino: Corpus, bankwide: Bankwide, path: str, selection: str, name: str
) -> None:
    chosen = SELECTIONS[selection](casino)
    items = _items(chosen, bankwide)
    read, order = TABLE_PATHS[path]
    wanted = items if order == "corpus" else bankwide.source_order(items)
    got = _rows(read(chosen, name), KEYS[name])
    assert got == bankwide.expected(name, wanted)
    assert got  # every selection has rows of every table (no vacuous pass)


@pytest.mark.parametrize("selection", sorted(SELECTIONS))
def test_raw_rows_are_the_selections_records(casino: Corpus, bankwide: Bankwide, selection: str) -> None:
    """Before: ``filter(label=...).scan("raw")`` gave all 1,030 records for 89 conversations."""
    chosen = SELECTIONS[selection](casino)
    wanted = [bankwide.raw[(s, cid)] for _, s, cid in _items(chosen, bankwide)]
    assert chosen.to_arrow("raw").column("dialogue_id").to_pylist() == wanted
    assert chosen.scan("raw").collect().get_column("dialogue_id").to_list() == wanted
    assert chosen.to_polars("raw").get_column("dialogue_id").to_list() == wanted


@pytest.mark.parametrize("selection", sorted(SELECTIONS))
def test_the_other_paths_give_the_selections_turns(
    casino: Corpus, bankwide: Bankwide, selection: str, tmp_path: Path
) -> None:
    """turns_with_labels, to_hf, the torch datasets and the exports, against the same rows."""
    from convbank.export import export
    from convbank.torch import CorpusDataset, IterableCorpusDataset

    chosen = SELECTIONS[selection](casino)
    items = _items(chosen, bankwide)
    turns = [r[:4] + r[5:] for r in bankwide.expected("turns", items)]  # no participant_id
    labels: dict[tuple[Any, ...], list[str]] = {}
    for cfg, split, cid, index, layer, label, _ in bankwide.expected(
        "annotations", bankwide.source_order(items)
    ):
        labels.setdefault((cfg, split, cid, index), []).append(f"{layer}:{label}")
    key = ("config", "split", "conversation_id", "turn_index", "text")

    table = chosen.turns_with_labels()
    assert _rows(table, key) == turns
    assert table.column("labels").to_pylist() == [labels.get(t[:4], []) for t in turns]
    for data in (CorpusDataset(chosen, "turns"), IterableCorpusDataset(chosen, "turns")):
        got = [tuple(t[k] for k in key) for t in data]
        assert got == turns and len(data) == len(turns)
        assert [t["labels"] for t in data] == [labels.get(t[:4], []) for t in turns]

    per_split: dict[str, list[str]] = {}  # to_hf: its rows per split, in the corpus's order
    for _, split, cid in items:
        per_split.setdefault(split, []).append(cid)
    pytest.importorskip("datasets")
    hf = chosen.to_hf()
    assert {s: [str(d) for d in ds["dialogue_id"]] for s, ds in hf.items()} == per_split

    once = bankwide.source_order(items)  # the per-part exports: source order, each once
    export(chosen, "jsonl", tmp_path / "jsonl")
    lines = []
    for cfg, split in dict.fromkeys((c, s) for c, s, _ in once):
        path = tmp_path / "jsonl" / f"casino_{cfg}_{split}.jsonl"
        lines += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(c["config"], c["split"], c["conversation_id"]) for c in lines] == once
    export(chosen, "csv", tmp_path / "csv")
    rows = []
    for cfg, split in dict.fromkeys((c, s) for c, s, _ in once):
        with (tmp_path / "csv" / f"casino_{cfg}_{split}.turns.csv").open(encoding="utf-8", newline="") as f:
            rows += [
                (r["config"], r["split"], r["conversation_id"], int(r["turn_index"]))
                for r in csv.DictReader(f)
            ]
    assert rows == [r[:4] for r in bankwide.expected("turns", once)]
    export(chosen, "parquet", tmp_path / "parquet")
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path / "parquet" / "casino_turns.parquet")
    assert _rows(written, KEYS["turns"]) == bankwide.expected("turns", items)  # as to_arrow


@pytest.mark.parametrize("selection", ["whole", *sorted(SELECTIONS)])
@pytest.mark.parametrize("name", [*sorted(KEYS), "raw"])
def test_scan_collects_what_to_polars_gives(casino: Corpus, selection: str, name: str) -> None:
    """Before: scan's ``meta`` was JSON text where to_polars has a struct, without the typed
    views; the rows of a selection came in source order, once each."""
    pl = pytest.importorskip("polars")
    chosen = casino if selection == "whole" else SELECTIONS[selection](casino)
    frame = chosen.to_polars(name)
    scanned = chosen.scan(name).collect()
    assert scanned.schema == frame.schema and scanned.equals(frame)
    if name in KEYS:
        assert isinstance(scanned.schema["meta"], pl.Struct)
    if name == "turns":
        assert "deal_counts" in scanned.columns  # CaSiNo's typed view
        lazy = chosen.scan(name, meta="json")
        assert lazy.collect().equals(chosen.to_polars(name, meta="json"))
        action = pl.col("kind") == "action"
        assert lazy.filter(action).select("text").collect().equals(frame.filter(action).select("text"))
        assert chosen.scan(name).head(3).collect().equals(frame.head(3))


def test_scan_pushes_projections_and_filters_into_the_verified_reader(casino: Corpus) -> None:
    pl = pytest.importorskip("polars")
    lazy = casino.scan("turns")
    plan = lazy.filter(pl.col("kind") == "action").select("text", "deal_counts").explain()
    assert "PYTHON[convbank]" in plan and "verified against the manifest" in plan
    got = lazy.filter(pl.col("kind") == "action").select("text", "deal_counts").collect()
    assert got.height == 2378 and got.columns == ["text", "deal_counts"]
    assert lazy.select(pl.len()).collect().item() == 14297


def test_corpora_are_equal_by_their_content(casino: Corpus) -> None:
    """Before: ``load("casino")[:900] == load("casino", split="train")`` was False."""
    import pickle

    train = convbank.load("casino", split="train")
    assert casino[:900] == train and hash(casino[:900]) == hash(train)
    assert casino.select(range(900, 930)) == convbank.load("casino", split="valid")
    assert casino[:930] == casino.select(range(930)) and casino[:] == casino
    assert casino[900:] != train and casino[:899] != train and casino[:930] != train
    assert train.shuffle(seed=1) == casino[:900].shuffle(seed=1) != train
    assert hash(train.shuffle(seed=1)) == hash(casino[:900].shuffle(seed=1))
    assert casino.select([3, 1, 3]) == train.select([3, 1, 3]) != casino.select([3, 1])
    assert pickle.loads(pickle.dumps(casino[5:9])) == train[5:9]
    assert len({casino[:900], train, train[:]}) == 1
    assert casino.filter(label="strategy:uv-part")[:0] == train[:0]  # both empty
    assert convbank.load("convai2", "volunteers")[:0] != train[:0]  # another dataset


def test_equality_of_whole_corpora_reads_no_data(casino: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    train = convbank.load("casino", split="train")
    prefix = casino[:900]

    def no_reads(*args: object, **kwargs: object) -> None:
        raise AssertionError("read data")

    monkeypatch.setattr(type(casino.snapshot), "read_row_group", no_reads)
    monkeypatch.setattr(type(casino.snapshot), "read_table", no_reads)
    assert prefix == train and hash(casino) != hash(train)


def test_unknown_columns_are_one_line_errors(casino: Corpus) -> None:
    """Before: ``iter_batches("turns", columns=["bogus"])`` raised a bare KeyError."""
    with pytest.raises(UnknownFieldError) as info:
        next(casino.iter_batches("turns", columns=["bogus"]))
    assert str(info.value) == (
        "casino's turns table has no column 'bogus'; columns: dataset, config, split, "
        "conversation_id, turn_index, participant_id, text, kind, meta"
    )
    with pytest.raises(UnknownFieldError) as info:
        next(casino.iter_batches("turns", columns=["text", "turn_idx"]))
    assert str(info.value) == (
        "casino's turns table has no column 'turn_idx'; did you mean turn_index? columns: dataset, "
        "config, split, conversation_id, turn_index, participant_id, text, kind, meta"
    )
    assert info.value.exit_code == 2 and isinstance(info.value, KeyError)


def test_an_unknown_column_of_a_side_table_is_a_one_line_error(built: Bank) -> None:
    curiosity = convbank.load("curiosity")
    assert curiosity.side_table("curiosity_facts", columns=["text"]) is not None
    with pytest.raises(UnknownFieldError, match=r"^curiosity's curiosity_facts table has no column 'txt'; "):
        curiosity.side_table("curiosity_facts", columns=["txt"])
