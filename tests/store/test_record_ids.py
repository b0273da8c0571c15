"""Opening a corpus and getting a conversation by id without a table file (issue 33): the
manifest's record entries give the row groups, a record file's index gives its ids and the
footers of the tables it was made from.

- ``load(name)[id]``, ``corpus[i]`` and ``conversation_ids()`` read no Parquet footer.
- Row groups the manifest misstates are refused before a table is read through them.
- A record file whose index says it was made from other tables than the manifest names has
  those tables' footers checked (a table file replaced since is refused, as by the tables'
  readers).
- A record file of the first layout (without ids, row groups or footers) is read as before,
  through the tables' footers.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import BinaryIO

import pytest

import convbank
from convbank.errors import DamagedBankError
from convbank.store import Bank, FileRef, Snapshot
from convbank.store.records import _HEADER, _INDEX_MAGIC, _TAIL, END, read_index


def _footers_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables whose footers are read from now on (each read of a table file checks its
    footer first, through the file it holds: :class:`convbank.store._held.HeldFile`)."""
    from convbank.store import _held
    from convbank.store.integrity import checked_footer

    read: list[str] = []
    checked = checked_footer

    def counted(ref: FileRef, f: BinaryIO) -> object:
        read.append(ref.table)
        return checked(ref, f)

    monkeypatch.setattr(_held, "checked_footer", counted)
    return read


def _edit_manifest(bank: Bank, edit: object) -> None:
    manifest = json.loads(bank.manifest_path.read_text(encoding="utf-8"))
    edit(manifest["datasets"]["casino"]["configs"]["default"])  # type: ignore[operator]
    bank.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def test_a_conversation_by_id_or_position_reads_no_table_file(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = list(convbank.load("casino", split="train"))
    read = _footers_read(monkeypatch)
    corpus = convbank.load("casino", split="train")
    assert len(corpus) == 900
    assert corpus[whole[417].conversation_id] == whole[417]
    assert corpus[899] == whole[899]
    assert corpus.conversation_ids() == [c.conversation_id for c in whole]
    assert corpus.take([whole[3].conversation_id, whole[1].conversation_id]) == [whole[3], whole[1]]
    with pytest.raises(KeyError):
        corpus["no such id"]
    assert read == []
    assert list(corpus) == whole  # iteration reads the tables: their footers are checked
    assert "conversations" in read and "turns" in read
    corpus.close()


@pytest.mark.parametrize("groups", [[899, 1], [901, -1], [1000]])
def test_row_groups_the_manifest_misstates_are_refused_before_a_table_is_read(
    casino_home: Bank, groups: list[int]
) -> None:
    """Row groups of the file's rows that are not its row groups are refused at the first
    table read; row groups that cannot be (a negative count, another sum) are not used: the
    footer gives them."""
    want = list(convbank.load("casino", split="train"))

    def misstate(cfg: dict) -> None:  # type: ignore[type-arg]
        assert cfg["records"]["train"]["groups"] == [900]
        cfg["records"]["train"]["groups"] = groups

    _edit_manifest(casino_home, misstate)
    corpus = convbank.load("casino", split="train")
    assert len(corpus) == 900 and corpus[12] == want[12]  # its record, checked against its index
    if groups != [899, 1]:
        assert list(corpus) == want
        return
    with pytest.raises(DamagedBankError) as raised:
        list(corpus)
    path = (
        casino_home.root
        / json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))["datasets"]["casino"]["configs"][
            "default"
        ]["files"]["conversations"]["train"]["path"]
    )
    assert str(raised.value) == (
        f"the bank is damaged: the manifest's row groups of {path} differ from the file's; run "
        "`convbank doctor`, then `convbank build casino` to rebuild it"
    )
    corpus.close()


def test_a_record_file_made_from_other_tables_has_their_footers_checked(casino_home: Bank) -> None:
    def other_turns(cfg: dict) -> None:  # type: ignore[type-arg]
        cfg["files"]["turns"]["valid"]["footer"] = "0" * 64

    _edit_manifest(casino_home, other_turns)
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(DamagedBankError, match=r"turns/.*is corrupt \(its Parquet footer differs"):
        corpus[0]
    corpus.close()


def _first_layout(path: Path) -> tuple[int, str, str]:
    """Rewrite a record file in the first layout (its entries kept); its size, sha256 and
    index digest."""
    import hashlib

    data = path.read_bytes()
    with path.open("rb") as f:
        index, _ = read_index(f)
    offsets = struct.pack(f"<{len(index.offsets)}Q", *index.offsets)
    old = _HEADER.pack(_INDEX_MAGIC, index.rows, index.pooled, len(index.dictionary))
    old += index.dictionary + offsets + index.digests
    tail = _TAIL.pack(len(old), END)
    path.write_bytes(data[: index.offsets[-1]] + old + tail)
    return (
        len(data[: index.offsets[-1]] + old + tail),
        hashlib.sha256(path.read_bytes()).hexdigest(),
        (hashlib.sha256(old + tail).hexdigest()),
    )


def test_a_record_file_of_the_first_layout_is_read_through_the_tables_footers(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = list(convbank.load("casino"))

    def first_layout(cfg: dict) -> None:  # type: ignore[type-arg]
        for entry in cfg["records"].values():
            size, sha, footer = _first_layout(casino_home.root / entry["path"])
            entry.update(bytes=size, sha256=sha, footer=footer)
            del entry["groups"]

    _edit_manifest(casino_home, first_layout)
    read = _footers_read(monkeypatch)
    corpus = convbank.load("casino")
    assert corpus[whole[1000].conversation_id] == whole[1000]
    assert [corpus[i] for i in range(len(corpus))] == whole
    assert corpus._source._record_files, "served from the record files"
    assert "conversations" in read and "turns" in read  # the row groups, ids and tables from the tables
    assert casino_home.doctor().problems == []
    corpus.close()


@pytest.fixture()
def pec_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bank:
    """A synthetic PEC whose train split is written in several pieces."""
    from convbank.build import build
    from convbank.datasets.pec.synthetic import write_pec
    from convbank.engines import local
    from convbank.fetch import Fetcher

    monkeypatch.setattr(local, "PIECE_BYTES", 200_000)
    write_pec(tmp_path / "src", 3000, seed=2)
    bank = Bank(tmp_path / "bank")
    fetcher = Fetcher(sources=[tmp_path / "src"], verify=False, progress=False, root=tmp_path / "home")
    assert build(["pec"], config="happy", fetcher=fetcher, bank=bank).ok
    return bank


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pieces whose record files are opened from now on."""
    opened: list[int] = []
    open_records = Snapshot.open_records

    def counted(self: Snapshot, ref: FileRef, kept: object = None) -> object:
        opened.append(ref.piece)
        return open_records(self, ref, kept)  # type: ignore[arg-type]

    monkeypatch.setattr(Snapshot, "open_records", counted)
    return opened


@pytest.mark.parametrize("ranges", ["recorded", "swapped"])
def test_an_id_is_looked_for_first_in_the_piece_whose_range_holds_it(
    pec_pieces: Bank, monkeypatch: pytest.MonkeyPatch, ranges: str
) -> None:
    """The manifest's id ranges say where to look first: an id of the last piece opens
    that piece's record file alone; ranges swapped between pieces (a misstated manifest)
    cost more files opened, never a conversation not found."""
    whole = list(convbank.load("pec", "happy", split="train", bank=pec_pieces))
    manifest = json.loads(pec_pieces.manifest_path.read_text(encoding="utf-8"))
    entries = manifest["datasets"]["pec"]["configs"]["happy"]["records"]["train"]
    assert len(entries) >= 3 and all(
        e["id_range"] == [min(e["id_range"]), max(e["id_range"])] for e in entries
    )
    if ranges == "swapped":
        entries[0]["id_range"], entries[-1]["id_range"] = entries[-1]["id_range"], entries[0]["id_range"]
        pec_pieces.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    opened = _opened(monkeypatch)
    corpus = convbank.load("pec", "happy", split="train", bank=pec_pieces)
    last = len(entries) - 1
    assert corpus[whole[-1].conversation_id] == whole[-1]
    # swapped: the first piece claims the last one's range, so it is opened first, then the
    # others in order until the id is found, in the last
    assert opened == ([last] if ranges == "recorded" else list(range(len(entries))))
    assert corpus.take([whole[0].conversation_id, whole[1500].conversation_id]) == [whole[0], whole[1500]]
    with pytest.raises(KeyError):
        corpus["happy-train-no-such"]
    assert sorted(set(opened)) == list(range(len(entries)))  # a miss looks in every piece
    corpus.close()
