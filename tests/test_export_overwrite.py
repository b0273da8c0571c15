"""An export never replaces what it did not write (issue 24.1): every format names the dataset
in its paths (``hf``: ``DIR/<dataset>/<config>/``), and a path holding another export's files,
or files convbank did not write, makes the export refuse with one line (exit 2) unless
``--overwrite``. The same export again (same dataset, format, parts, --where, --as) replaces
its own files."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from click.testing import CliRunner

from convbank import load
from convbank.cli import cli
from convbank.errors import ExportError
from convbank.export import export
from convbank.export._place import RECORD
from convbank.store import Bank


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_hf_exports_of_two_datasets_live_side_by_side(built: Bank, tmp_path: Path) -> None:
    coll = tmp_path / "coll"
    assert _cli("export", "casino", "--format", "hf", "-o", str(coll)) == (
        0,
        f"{coll / 'casino' / 'default'}\n",
    )
    assert _cli("export", "ccpe", "--format", "hf", "-o", str(coll))[0] == 0
    casino = datasets.load_from_disk(str(coll / "casino" / "default"))
    ccpe = datasets.load_from_disk(str(coll / "ccpe" / "default"))
    assert casino["train"].num_rows == 900 and ccpe["train"].num_rows == 3
    record = json.loads((coll / RECORD).read_text(encoding="utf-8"))["exports"]
    assert sorted(record) == ["casino/default", "ccpe/default"]
    assert record["casino/default"]["format"] == "hf"


def test_another_datasets_export_is_refused_in_one_line(built: Bank, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export(load("casino"), "parquet", out)
    before = (out / "turns.parquet").read_bytes()
    code, output = _cli("export", "ccpe", "--format", "parquet", "-o", str(out))
    assert code == 2
    assert output == (
        f"error: {out / 'conversations.parquet'} holds the parquet export of casino (default/train, "
        "default/valid, default/test); the parquet export of ccpe (default/train) would replace it: "
        "pass --overwrite (overwrite=True), or export into another folder\n"
    )
    assert (out / "turns.parquet").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left
    code, _ = _cli("export", "ccpe", "--format", "parquet", "-o", str(out), "--overwrite")
    assert code == 0 and (out / "turns.parquet").read_bytes() != before
    assert {e["dataset"] for e in json.loads((out / RECORD).read_text())["exports"].values()} == {"ccpe"}


def test_the_same_export_again_replaces_its_own_files(built: Bank, tmp_path: Path) -> None:
    first = export(load("casino", split="valid"), "jsonl", tmp_path)
    (tmp_path / "casino_default_valid.jsonl").write_text("stale\n", encoding="utf-8")
    assert export(load("casino", split="valid"), "jsonl", tmp_path) == first
    assert len((tmp_path / "casino_default_valid.jsonl").read_text(encoding="utf-8").splitlines()) == 30


def test_a_different_selection_of_the_same_dataset_is_another_export(built: Bank, tmp_path: Path) -> None:
    export(load("casino", split="valid"), "jsonl", tmp_path, where="conversation_id = '157'")
    with pytest.raises(ExportError, match=r"holds the jsonl export of casino \(default/valid, --where"):
        export(load("casino", split="valid"), "jsonl", tmp_path)
    assert len((tmp_path / "casino_default_valid.jsonl").read_text(encoding="utf-8").splitlines()) == 1
    export(load("casino", split="valid"), "jsonl", tmp_path, overwrite=True)
    assert len((tmp_path / "casino_default_valid.jsonl").read_text(encoding="utf-8").splitlines()) == 30


def test_files_convbank_did_not_write_are_kept(built: Bank, tmp_path: Path) -> None:
    mine = tmp_path / "casino_default_valid.chat.jsonl"
    mine.write_text("my own notes\n", encoding="utf-8")
    code, output = _cli("export", "casino", "--split", "valid", "--format", "chat", "-o", str(tmp_path))
    assert code == 2
    assert output.startswith(f"error: {mine} exists and convbank did not write it there; the chat export")
    assert mine.read_text(encoding="utf-8") == "my own notes\n"
    (tmp_path / "other.txt").write_text("kept\n", encoding="utf-8")  # beside, not in the way
    assert _cli("export", "casino", "--format", "csv", "-o", str(tmp_path))[0] == 0
    assert (tmp_path / "other.txt").read_text(encoding="utf-8") == "kept\n"


def test_a_source_export_checks_the_files_it_wrote(built: Bank, tmp_path: Path) -> None:
    """The source export's names are each dataset's: checked once written, before any move."""
    export(load("casino"), "source", tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir() if p.name != RECORD)
    (tmp_path / names[0]).write_bytes(b"edited")
    code, _ = _cli("export", "casino", "--format", "source", "-o", str(tmp_path))
    assert code == 0  # the same export: it replaces its own file
    assert (tmp_path / names[0]).read_bytes() != b"edited"
    export(load("casino"), "jsonl", tmp_path / "x")
    (tmp_path / "x" / names[0]).write_bytes(b"mine")
    with pytest.raises(ExportError, match="convbank did not write it there; the source export"):
        export(load("casino"), "source", tmp_path / "x")
    assert (tmp_path / "x" / names[0]).read_bytes() == b"mine"


def test_convokit_and_hf_of_one_dataset_do_not_share_a_folder_silently(built: Bank, tmp_path: Path) -> None:
    export(load("casino"), "hf", tmp_path)
    with pytest.raises(ExportError, match=r"casino/default holds the hf export of casino"):
        export(load("casino"), "convokit", tmp_path)
    assert datasets.load_from_disk(str(tmp_path / "casino" / "default"))["valid"].num_rows == 30
