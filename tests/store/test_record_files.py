"""The record files (issue 33): ``corpus[i]`` served from one compressed record a conversation,
written with the bank and vouched for by its manifest like every table file.

- Every conversation of every dataset comes back from its record exactly as the tables give
  it (iteration streams the tables; ``corpus[i]``, ``take`` and a shuffled selection read
  the records).
- A damaged record file is refused with the one-line error that names it, as a damaged table
  file is: a byte flipped in an entry, in the index, a truncated file, another split's record
  file put in its place; ``doctor`` names it too.
- A generation pinned by a reader keeps its record files through a rebuild and a clean-up;
  released, they are collected with the rest.
- A bank written before record files (none in its manifest) is read from its tables.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

import convbank
from convbank.build import build
from convbank.errors import DamagedBankError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import ALL_COUNTS, SHARED


def _record_file(bank: Bank, dataset: str, split: str) -> Path:
    with bank.snapshot() as snap:
        (ref,) = [r for r in snap.record_refs(dataset) if r.split == split]
        return ref.path


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("dataset", "config"), sorted(ALL_COUNTS))
def test_every_conversation_comes_back_from_its_record_as_the_tables_give_it(
    built: Bank, dataset: str, config: str
) -> None:
    corpus = convbank.load(dataset, config)
    with built.snapshot() as snap:
        assert len(snap.record_refs(dataset)) >= len(ALL_COUNTS[(dataset, config)])
    streamed = list(corpus)  # whole-corpus iteration decodes the tables' batches
    assert [corpus[i] for i in range(len(corpus))] == streamed
    assert corpus.take([c.conversation_id for c in reversed(streamed)]) == streamed[::-1]
    shuffled = corpus.shuffle(seed=0)
    order = shuffled._positions().tolist()
    assert list(shuffled) == [streamed[i] for i in order]
    assert corpus._source._record_files, "served from the record files"
    corpus.close()


def test_each_read_is_a_new_object(built: Bank) -> None:
    corpus = convbank.load("casino")
    first, again = corpus[0], corpus[0]
    assert first == again and first is not again
    first.turns.clear()
    assert corpus[0] == again


def test_a_flipped_byte_in_an_entry_is_refused_naming_the_file(casino_home: Bank) -> None:
    path = _record_file(casino_home, "casino", "valid")
    _flip(path, 20)  # inside the first entry
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(DamagedBankError, match="corrupt") as caught:
        corpus[0]
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)
    assert corpus[len(corpus) - 1].split == "valid"  # the other entries are sound


def test_a_flipped_byte_in_the_index_is_refused(casino_home: Bank) -> None:
    path = _record_file(casino_home, "casino", "valid")
    _flip(path, path.stat().st_size - 40)  # in the digests, just before the tail
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(DamagedBankError, match="index differs from the manifest") as caught:
        corpus[3]
    assert str(path) in str(caught.value)


def test_a_truncated_record_file_is_refused_at_open(casino_home: Bank) -> None:
    path = _record_file(casino_home, "casino", "test")
    os.truncate(path, path.stat().st_size - 100)
    with pytest.raises(DamagedBankError, match="bytes where the manifest says") as caught:
        convbank.load("casino", split="test")
    assert str(path) in str(caught.value)


def test_a_record_file_truncated_under_a_live_reader_is_refused_not_a_crash(casino_home: Bank) -> None:
    path = _record_file(casino_home, "casino", "train")
    corpus = convbank.load("casino", split="train")
    assert corpus[0].conversation_id  # the record file is open, its index checked
    os.truncate(path, 1000)
    with pytest.raises(DamagedBankError, match="truncated"):
        corpus[len(corpus) - 1]


def test_another_splits_record_file_in_its_place_is_refused(casino_home: Bank) -> None:
    """The same format, sound in itself, but not the file the manifest vouches for."""
    valid, test = _record_file(casino_home, "casino", "valid"), _record_file(casino_home, "casino", "test")
    shutil.copyfile(test, valid)
    with casino_home.snapshot() as snap:
        (ref,) = [r for r in snap.record_refs("casino") if r.split == "valid"]
        with pytest.raises(DamagedBankError) as caught:
            snap.check("casino")  # another size: refused by a stat, before anything is read
        assert str(valid) in str(caught.value)
        # the size aside (as if the forged file had been padded to it), the index is refused
        with pytest.raises(DamagedBankError, match="index differs from the manifest"):
            snap.open_records(replace(ref, bytes=test.stat().st_size))


def test_doctor_names_a_damaged_record_file(casino_home: Bank) -> None:
    path = _record_file(casino_home, "casino", "train")
    assert casino_home.doctor().problems == []
    with casino_home.snapshot() as snap:
        files = len(snap.refs()) + len(snap.record_refs())
    assert casino_home.doctor().files == files
    _flip(path, 100)
    problems = casino_home.doctor().problems
    assert len(problems) == 1 and str(path) in problems[0] and "sha256" in problems[0]
    _flip(path, 100)
    _flip(path, path.stat().st_size - 40)
    problems = casino_home.doctor(deep=False).problems
    assert len(problems) == 1 and "index differs" in problems[0]


def test_a_pinned_generation_keeps_its_record_files_through_a_rebuild_and_a_clean_up(
    tmp_path: Path, casino_home: Bank
) -> None:
    corpus = convbank.load("casino", split="valid")
    before = [corpus[i] for i in range(len(corpus))]
    old = _record_file(casino_home, "casino", "valid")
    source = tmp_path / "changed" / "casino"
    shutil.copytree(SHARED / "casino", source)
    records = json.loads((source / "casino_valid.json").read_text(encoding="utf-8"))
    records[0]["participant_info"]["mturk_agent_1"]["demographics"]["age"] = 99
    (source / "casino_valid.json").write_text(json.dumps(records), encoding="utf-8")
    fetcher = Fetcher(sources=[source.parent], verify=False, root=tmp_path / "fetch", progress=False)
    assert build(["casino"], fetcher=fetcher, bank=casino_home).ok
    with casino_home.lock():
        pass  # the clean-up a build's lock runs
    assert old.exists() and _record_file(casino_home, "casino", "valid") != old
    fresh = convbank.load("casino", split="valid")
    assert fresh[0].participant("mturk_agent_1").meta["demographics"]["age"] == 99
    assert fresh[0] != before[0]
    assert [corpus[i] for i in range(len(corpus))] == before  # the pinned generation, still
    corpus.close()
    fresh.close()
    with casino_home.lock():
        pass
    assert not old.exists()
    assert casino_home.doctor().leftovers == []


def test_a_bank_written_before_record_files_is_read_from_its_tables(casino_home: Bank) -> None:
    want = list(convbank.load("casino", split="test"))
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    for cfg in manifest["datasets"]["casino"]["configs"].values():
        cfg.pop("records")
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    corpus = convbank.load("casino", split="test")
    assert [corpus[i] for i in range(len(corpus))] == want
    assert not corpus._source._record_files
    assert casino_home.doctor().problems == []


def test_a_record_path_outside_its_folder_is_a_damaged_manifest(casino_home: Bank) -> None:
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    entry = manifest["datasets"]["casino"]["configs"]["default"]["records"]["valid"]
    entry["path"] = "turns/dataset=casino/config=default/split=valid/" + entry["path"].rsplit("/", 1)[1]
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(DamagedBankError, match="is not a record file of casino/default/valid"):
        convbank.load("casino")


def test_a_batch_without_a_child_table_still_gives_each_conversation_its_record(
    built: Bank, tmp_path: Path
) -> None:
    """A mapper that leaves out a table with no rows (annotations here) still gets a record
    per conversation, row for row with the conversations file."""
    from convbank.model import conversations_to_tables
    from convbank.store.records import RecordFile, read_index
    from convbank.store.staging import Staging

    convs = [msgspec.structs.replace(c, annotations=[]) for c in convbank.load("casino", split="valid")][:5]
    tables = conversations_to_tables(convs)
    del tables["annotations"]
    staging = Staging(tmp_path / "staging", "casino", "default")
    staging.write_batch("valid", tables)
    staging.close()
    assert staging.rows[("records", "valid", 0)] == 5
    path = staging.path("records", "valid")
    with path.open("rb") as f:
        index, _ = read_index(f)
    records = RecordFile(os.open(path, os.O_RDONLY), index, DamagedBankError)
    try:
        assert [records.conversation(i) for i in range(5)] == convs
    finally:
        records.close()


def _preads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of every ``os.pread`` of the record files from now on."""
    from convbank.store import records

    sizes: list[int] = []
    real = records.os.pread

    def counted(fd: int, size: int, at: int) -> bytes:
        sizes.append(size)
        return real(fd, size, at)

    monkeypatch.setattr(records.os, "pread", counted)
    return sizes


def test_a_pooled_file_reads_its_pool_at_once_and_entries_read_again_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convbank.datasets.pec.synthetic import write_pec

    write_pec(tmp_path / "src", 600, seed=1, speakers=100)
    bank = Bank(tmp_path / "bank")
    fetcher = Fetcher(sources=[tmp_path / "src"], verify=False, progress=False, root=tmp_path / "home")
    assert build(["pec"], config="happy", fetcher=fetcher, bank=bank).ok
    corpus = convbank.load("pec", "happy", split="train", bank=bank)
    expected = list(corpus)  # from the tables
    reads = _preads(monkeypatch)
    assert [corpus[i] for i in range(len(corpus))] == expected
    (records,) = corpus._source._record_files.values()
    assert records.index.pooled > 0, "PEC's speakers are pooled"
    # each conversation's entry; the speakers one by one until those reads were worth the
    # pool's bytes, and then the rest of them in one read
    from convbank.store.records import READ_WORTH

    pool = records.index.offsets[-1] - records.index.offsets[records.rows]
    alone = -(-pool // READ_WORTH) - 1
    assert alone > 0 and reads.count(pool) == 1
    assert len(reads) == len(corpus) + alone + 1
    reads.clear()
    assert [corpus[i] for i in range(len(corpus))] == expected  # new objects, equal
    assert reads == []  # every entry kept, checked once


def test_kept_entries_stay_within_their_budget(built: Bank) -> None:
    from convbank.store.records import Kept, RecordFile

    corpus = convbank.load("casino", split="train")
    assert corpus[0]
    (opened,) = corpus._source._record_files.values()
    kept = Kept(20_000)
    small = RecordFile(os.dup(opened._fd), opened.index, opened._damage, kept)
    sizes = [len(small.entry(k)) for k in range(50)]
    assert sum(sizes) > 20_000 and 0 < kept.held <= 20_000
    assert [k for _, k in kept.order()] == list(range(50))[-len(kept.order()) :]  # the oldest went first
    assert [small.conversation(k) for k in range(50)] == [corpus[k] for k in range(50)]
    small.close()


def test_one_budget_for_all_the_record_files_of_a_corpus(built: Bank) -> None:
    corpus = convbank.load("casino")  # three splits, three record files
    assert [c.split for c in (corpus[0], corpus[len(corpus) - 1])] == ["train", "test"]
    files = list(corpus._source._record_files.values())
    assert len(files) == 2 and files[0].kept is files[1].kept is corpus._source._kept
    assert {number for number, _ in corpus._source._kept.order()} == {f._number for f in files}


def test_a_kept_entry_is_the_checked_bytes_and_one_not_kept_is_checked_when_read(
    casino_home: Bank,
) -> None:
    corpus = convbank.load("casino", split="valid")
    first = corpus[0]
    path = _record_file(casino_home, "casino", "valid")
    data = bytearray(path.read_bytes())
    data[20] ^= 1  # in entry 0, already read and checked
    (opened,) = corpus._source._record_files.values()
    data[opened.index.offsets[-2] + 5] ^= 1  # in the last entry, not yet read
    os.pwrite(os.open(path, os.O_WRONLY), bytes(data), 0)
    assert corpus[0] == first  # the bytes this reader checked, not the damaged ones
    with pytest.raises(DamagedBankError, match=r"corrupt \(entry 29 differs"):
        corpus[len(corpus) - 1]
