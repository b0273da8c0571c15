"""What a build keeps a conversation until its end: 8 bytes of its id's hash (the repeated-id
check) and the record file's index entry, never the ids as Python strings read back (found by
pass 21: a plugin's build of 400,000 conversations peaked at 210 MB, 195 MB since)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED

import convbank
from convbank.build import SeenIds, build
from convbank.fetch import Fetcher
from convbank.store import Bank
from convbank.store.records import Index


def test_publishing_a_build_reads_no_record_file_s_ids_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The least and greatest id of each record file are its writer's, not its 900 ids
    decoded again (before: every record file's ids were read back as a list at publishing,
    the build's peak: about 70 bytes a conversation)."""
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path))
    read: list[int] = []
    ids = Index.ids

    def counted(index: Index) -> list[str]:
        read.append(index.rows)
        return ids(index)

    monkeypatch.setattr(Index, "ids", counted)
    bank = Bank(tmp_path / "bank")
    build(["casino"], fetcher=Fetcher(sources=[SHARED], verify=False, progress=False), bank=bank)
    assert read == []
    entry = bank.manifest().datasets["casino"].configs["default"].records["train"]
    entries = entry if isinstance(entry, list) else [entry]
    corpus = convbank.load("casino", split="train")
    every = corpus.conversation_ids()
    corpus.close()
    assert [e.id_range for e in entries] == [[min(every), max(every)]]
    assert len(every) == 900 and min(every) != max(every)


def test_the_repeated_id_check_keeps_8_bytes_a_conversation() -> None:
    """Each batch's place is its split and first record, not an array of places (before: 16
    bytes a conversation)."""
    seen = SeenIds()
    for start in range(0, 10_000, 1_000):
        seen.add("train", start, [f"c{i}" for i in range(start, start + 1_000)])
    seen.add("valid", 0, ["v0", "c7654"])
    held = [a for v in vars(seen).values() if isinstance(v, list) for a in v if isinstance(a, np.ndarray)]
    assert (len(held), sum(a.nbytes for a in held)) == (11, 8 * 10_002)
    ids = {"train": [f"c{i}" for i in range(10_000)], "valid": ["v0", "c7654"]}
    assert seen.repeat(lambda split, i: ids[split][i]) == ("c7654", "valid", 1, "train", 7654)
