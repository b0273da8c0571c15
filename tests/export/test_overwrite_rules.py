"""An export never replaces what it did not write (issue 24.1): every format names the dataset
in its paths (``hf``: ``DIR/<dataset>/<config>/``, ``parquet``: ``DIR/<dataset>_<table>.parquet``,
``convokit`` and ``croissant``: ``DIR/<dataset>_<format>/``), so datasets and formats share a
folder, and a path holding another export's files,
or files convbank did not write, makes the export refuse with one line (exit 2) unless
``--overwrite``. The same export again (same dataset, format, parts, --where, --as) replaces
its own files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets
import pytest
from click.testing import CliRunner

from convbank import load
from convbank.cli import cli
from convbank.errors import ExportError
from convbank.export import FORMATS, export
from convbank.export._place import LOCK, RECORD
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


def test_another_export_at_the_same_paths_is_refused_in_one_line(built: Bank, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export(load("casino"), "parquet", out)
    before = (out / "casino_turns.parquet").read_bytes()
    code, output = _cli("export", "casino", "--split", "valid", "--format", "parquet", "-o", str(out))
    assert code == 2
    assert output == (
        f"error: {out / 'casino_conversations.parquet'} holds the parquet export of casino (default/train, "
        "default/valid, default/test); the parquet export of casino (default/valid) would replace it: "
        "pass --overwrite (overwrite=True), or export into another folder\n"
    )
    assert (out / "casino_turns.parquet").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left
    code, _ = _cli(
        "export", "casino", "--split", "valid", "--format", "parquet", "-o", str(out), "--overwrite"
    )
    assert code == 0 and (out / "casino_turns.parquet").read_bytes() != before
    exports = json.loads((out / RECORD).read_text())["exports"].values()
    assert {tuple(e["parts"]) for e in exports} == {("default/valid",)}


def _contents(paths: list[Path]) -> dict[str, bytes]:
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file()]
    return {str(f): f.read_bytes() for f in files}


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_datasets_share_a_folder_in_every_format(built: Bank, tmp_path: Path, fmt: str) -> None:
    """Before: parquet and croissant wrote DIR/<table>.parquet, so a second dataset was refused
    (or, with --overwrite, replaced the first)."""
    first = export(load("casino", split="valid"), fmt, tmp_path)
    kept = _contents(first)
    second = export(load("ccpe"), fmt, tmp_path)
    assert kept and _contents(first) == kept and all(p.exists() for p in second)
    assert not set(map(str, first)) & set(map(str, second))
    datasets_recorded = {
        e["dataset"] for e in json.loads((tmp_path / RECORD).read_text())["exports"].values()
    }
    assert datasets_recorded == {"casino", "ccpe"}
    names = [p.relative_to(tmp_path).as_posix() for p in first]
    assert fmt == "source" or all("casino" in n.split("/")[0] for n in names)  # the path names it


def test_every_format_of_one_dataset_shares_a_folder(built: Bank, tmp_path: Path) -> None:
    """Before: hf (DIR/casino/default) and convokit (DIR/casino) refused each other, and so
    did parquet and croissant (DIR/<table>.parquet)."""
    written = {fmt: export(load("casino", split="valid"), fmt, tmp_path) for fmt in FORMATS}
    assert all(p.exists() for paths in written.values() for p in paths)
    assert [p.name for p in written["convokit"]] == ["casino_convokit"]
    assert [p.name for p in written["croissant"]] == ["casino_croissant"]
    assert datasets.load_from_disk(str(tmp_path / "casino" / "default"))["valid"].num_rows == 30
    recorded = json.loads((tmp_path / RECORD).read_text())["exports"].values()
    assert {e["format"] for e in recorded} == set(FORMATS)


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
    names = sorted(p.name for p in tmp_path.iterdir() if p.name not in (RECORD, LOCK))
    (tmp_path / names[0]).write_bytes(b"edited")
    code, _ = _cli("export", "casino", "--format", "source", "-o", str(tmp_path))
    assert code == 0  # the same export: it replaces its own file
    assert (tmp_path / names[0]).read_bytes() != b"edited"
    export(load("casino"), "jsonl", tmp_path / "x")
    (tmp_path / "x" / names[0]).write_bytes(b"mine")
    with pytest.raises(ExportError, match="convbank did not write it there; the source export"):
        export(load("casino"), "source", tmp_path / "x")
    assert (tmp_path / "x" / names[0]).read_bytes() == b"mine"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


OWN_PLACES = {
    "the bank": lambda home, tmp: home / "bank",
    "a table folder of the bank": lambda home, tmp: home / "bank" / "turns",
    "a new folder in the bank": lambda home, tmp: home / "bank" / "out",
    "the bank spelled with ..": lambda home, tmp: home / "bank" / "turns" / ".." / ".." / "bank",
    "the downloads under CONVBANK_HOME": lambda home, tmp: home / "downloads",
    "the map() cache under CONVBANK_HOME": lambda home, tmp: home / "cache" / "map",
    "a link to the bank": lambda home, tmp: (
        (tmp / "link").symlink_to(home / "bank"),
        tmp / "link",
    )[1],
    "a folder under a link to the bank": lambda home, tmp: (
        (tmp / "link").symlink_to(home / "bank"),
        tmp / "link" / "sub",
    )[1],
}


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize("place", list(OWN_PLACES))
def test_an_export_into_the_bank_or_convbank_home_is_refused(fmt: str, place: str, tmp_path: Path) -> None:
    """An export's folder in the bank or under ``CONVBANK_HOME`` (by any spelling or link)
    is one line, exit 2, and nothing there changes (before: the files were written among the
    bank's table folders, exit 0; 24 of 24 cases)."""
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "mine")[0] == 0
    home = tmp_path / "home"
    output = OWN_PLACES[place](home, tmp_path)
    before = _snapshot(home)
    result = CliRunner().invoke(cli, ["export", "mine", "--format", fmt, "-o", str(output), "--overwrite"])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "convbank keeps its own files" in result.stderr, result.stderr
    assert _snapshot(home) == before
    assert not (output / "sub").exists() and not os.path.lexists(home / "bank" / "out")


@pytest.mark.parametrize("folder", ["", "exports"])
def test_an_export_into_a_folder_of_ones_own_under_convbank_home_is_written(
    folder: str, tmp_path: Path
) -> None:
    """``CONVBANK_HOME`` itself, or a folder of the user's under it, is no place of convbank's
    own: the export is written there, and the bank beside it is unchanged."""
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "mine")[0] == 0
    home = tmp_path / "home"
    bank = _snapshot(home / "bank")
    result = CliRunner().invoke(cli, ["export", "mine", "--format", "jsonl", "-o", str(home / folder)])
    assert result.exit_code == 0, result.output
    assert (home / folder / "mine_default_train.jsonl").is_file()
    assert _snapshot(home / "bank") == bank


def test_an_export_whose_folder_would_hold_the_bank_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``hf`` export of a dataset named as ``CONVBANK_HOME``'s folder, config ``bank``, into
    its parent would replace the bank with ``--overwrite``: refused, exit 2."""
    home = tmp_path / "convbank"
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "convbank", "--config", "bank")[0] == 0
    before = _snapshot(home)
    result = CliRunner().invoke(
        cli, ["export", "convbank", "--format", "hf", "-o", str(tmp_path), "--overwrite"]
    )
    assert result.exit_code == 2, result.output
    assert "the export would write there" in result.stderr, result.stderr
    assert _snapshot(home) == before
    assert len(load("convbank")) == 1


@pytest.mark.parametrize("name", ["manifest.json", "report.html", "turns/report.html"])
def test_a_report_into_the_bank_is_refused(name: str, tmp_path: Path) -> None:
    """``report -o $CONVBANK_HOME/bank/manifest.json`` is one line, exit 2, the bank kept
    (before: the manifest replaced by the report, every later command exit 4)."""
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "mine")[0] == 0
    home = tmp_path / "home"
    before = _snapshot(home)
    result = CliRunner().invoke(cli, ["report", "mine", "-o", str(home / "bank" / name)])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "convbank keeps its own files" in result.stderr, result.stderr
    assert _snapshot(home) == before
    assert _cli("list")[0] == 0


def test_the_staged_placement_every_export_shares_refuses_the_bank(tmp_path: Path) -> None:
    """What ``bench --export`` writes through (``placed``) refuses the bank as ``export`` does."""
    from convbank.export._place import placed

    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "mine")[0] == 0
    bank = tmp_path / "home" / "bank"
    with (
        pytest.raises(ExportError, match="convbank keeps its own files"),
        placed(bank, {"format": "x"}, overwrite=True),
    ):
        pass
    assert (
        not (tmp_path / "home" / "bank" / RECORD).exists()
        and not (tmp_path / "home" / "bank" / LOCK).exists()
    )


def test_a_report_or_predictions_file_never_replaces_a_fifo_or_a_device(tmp_path: Path) -> None:
    """Sixth round. Before: `report -o PATH` and `bench --write-predictions PATH` renamed their
    file over whatever was at PATH: a FIFO was replaced by a regular file, and a link to a
    device (`-o /dev/stdout`) by the report; as root, `--write-predictions /dev/full` replaced
    the device node itself. Now a FIFO, a device or a link to one is one line naming it, exit 1,
    left as it was; a link to a file is still replaced, not followed."""
    from convbank.bench import write_predictions

    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "mine")[0] == 0
    fifo, device = tmp_path / "out.fifo", tmp_path / "out.device"
    os.mkfifo(fifo)
    device.symlink_to("/dev/null")
    for path, kind in ((fifo, "a FIFO (named pipe)"), (device, "a device")):
        result = CliRunner().invoke(cli, ["report", "mine", "-o", str(path)])
        assert (result.exit_code, result.stderr) == (
            1,
            f"error: {path}: {kind}, not a regular file; check that the path exists and can be written\n",
        )
        with pytest.raises(OSError, match="not a regular file"):
            write_predictions(path, {"a": 1})
    assert fifo.is_fifo() and os.readlink(device) == "/dev/null"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    target = tmp_path / "target.html"
    target.write_text("old")
    linked = tmp_path / "linked.html"
    linked.symlink_to(target)
    assert _cli("report", "mine", "-o", str(linked))[0] == 0
    assert not linked.is_symlink() and target.read_text() == "old"


def test_a_report_or_predictions_file_in_a_folders_place_is_said_as_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `report -o ''` (the current folder) was `error: ./..4242.x1y2.tmp: Device or
    resource busy`, a temporary file never seen named, and `write_predictions(folder)` the
    rename's error naming the temporary file too; 2 of 2."""
    from convbank.bench import write_predictions

    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    assert _cli("import", str(chats), "--name", "mine")[0] == 0
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["report", "mine", "-o", ""])
    assert (result.exit_code, result.stderr) == (
        1,
        "error: .: a folder, not a regular file; check that the path exists and can be written\n",
    )
    with pytest.raises(OSError, match=f"a folder, not a regular file: '{tmp_path}'"):
        write_predictions(tmp_path, {"a": 1})
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_an_export_folder_whose_path_is_not_utf8_is_one_line(built: Bank, tmp_path: Path, fmt: str) -> None:
    """Before: ``-o $'out\\xff'`` was a ``UnicodeEncodeError`` traceback, exit 1, from pyarrow
    (``parquet``, ``croissant``) and ``datasets`` (``hf``), while the other formats wrote
    there. Now every format refuses such a folder in one line, exit 2, before any work."""
    out = tmp_path / os.fsdecode(b"out\xff")
    code, output = _cli("export", "casino", "--format", fmt, "-o", str(out))
    shown = str(out).replace("\udcff", "\\udcff")
    message = "its path is not UTF-8 text (byte 0xff), which not every writer can open; rename it"
    assert (code, output) == (2, f"error: {shown}: {message}\n")
    assert os.listdir(tmp_path) == []
    with pytest.raises(ExportError) as caught:
        export(load("casino"), fmt, out)
    assert str(caught.value) == f"{out}: {message}"


@pytest.mark.parametrize("kind", ["a file", "a FIFO"])
def test_a_file_or_fifo_in_the_place_of_an_exports_folder_never_poisons_the_folder(
    built: Bank, tmp_path: Path, kind: str
) -> None:
    """Before: a FIFO at ``casino`` (where ``hf`` writes ``casino/default``) passed the check,
    and a file there with ``--overwrite`` was taken as replaced: the export wrote its moves into
    the record, failed with ``casino: File exists``, exit 1, and every later export into the
    folder (``csv`` too) failed the same, 2 of 2 kinds."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "casino").touch() if kind == "a file" else os.mkfifo(out / "casino")
    code, output = _cli("export", "casino", "--format", "hf", "-o", str(out))
    assert (code, output) == (
        2,
        f"error: {out / 'casino'} exists and convbank did not write it there; the hf export of casino "
        "(default/train, default/valid, default/test) would replace it: pass --overwrite "
        "(overwrite=True), or export into another folder\n",
    )
    assert sorted(os.listdir(out)) == ["casino"]
    assert _cli("export", "casino", "--format", "csv", "-o", str(out))[0] == 0
    code, output = _cli("export", "casino", "--format", "hf", "-o", str(out), "--overwrite")
    assert (code, output) == (0, f"{out / 'casino' / 'default'}\n")
    assert datasets.load_from_disk(str(out / "casino" / "default"))["train"].num_rows == 900
    record = json.loads((out / RECORD).read_text(encoding="utf-8"))
    assert set(record) == {"exports"} and "casino/default" in record["exports"]
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [RECORD, LOCK]


def test_the_export_of_another_selection_is_another_export(built: Bank, tmp_path: Path) -> None:
    """A corpus that is a selection is recorded with it (``selection``: the count and a digest
    of its ids). Before: ``export(corpus.select(range(5)), ...)`` and then ``export(corpus.filter(
    "num_turns > 14"), ...)`` into the folder replaced the 5 with 224 without a word, the
    record saying ``where: null`` for both, 2 of 2 selections."""
    out = tmp_path / "out"
    train = load("casino", split="train")
    export(train.select(range(5)), "jsonl", out)
    export(train.select([4, 3, 2, 1, 0]), "jsonl", out)  # the same selection, in another order
    with pytest.raises(ExportError) as caught:
        export(train.filter("num_turns > 14"), "jsonl", out)
    file = out / "casino_default_train.jsonl"
    assert str(caught.value).startswith(
        f"{file} holds the jsonl export of casino (default/train, selection '5 of 900 conversations "
    ), str(caught.value)
    assert "; the jsonl export of casino (default/train, selection '224 of 900 conversations " in str(
        caught.value
    )
    assert len(file.read_bytes().splitlines()) == 5
    export(train.filter("num_turns > 14"), "jsonl", out, overwrite=True)
    assert len(file.read_bytes().splitlines()) == 224
    record = json.loads((out / RECORD).read_text(encoding="utf-8"))["exports"][file.name]
    assert record["selection"].startswith("224 of 900 conversations ") and record["where"] is None
    export(train.shuffle(3).select(range(900)), "jsonl", out, overwrite=True)  # every one: no selection
    export(train, "jsonl", out)
    assert "selection" not in json.loads((out / RECORD).read_text(encoding="utf-8"))["exports"][file.name]


def test_a_source_export_of_a_selection_is_refused_as_its_where_is(built: Bank, tmp_path: Path) -> None:
    """``source`` writes the publisher's files whole, byte for byte. Before: ``export(corpus.
    filter("num_turns > 14"), "source", out)`` wrote ``casino_train.json`` of 224 of its 900
    records under the publisher's name, exit 0, where ``where=`` was refused, 3 of 3
    selections (``filter``, ``select``, ``shard``)."""
    out = tmp_path / "out"
    train = load("casino", split="train")
    for chosen, count in (
        (train.filter("num_turns > 14"), 224),
        (train.select(range(3)), 3),
        (train.shard(2, 0), 450),
    ):
        with pytest.raises(ExportError) as caught:
            export(chosen, "source", out)
        assert str(caught.value) == (
            "the source export rebuilds whole files; it takes no corpus that is a selection "
            f"({count} of 900 conversations): export the corpus whole"
        )
        assert not out.exists()
    assert export(train.shuffle(2), "source", out) == [out / "casino_train.json"]  # every one, whole
    assert len(json.loads((out / "casino_train.json").read_text(encoding="utf-8"))) == 900


def test_a_failed_export_removes_the_folders_it_made_above_its_own(built: Bank, tmp_path: Path) -> None:
    """Before: a failed export into ``new/sub/out`` removed ``out`` but left ``new/sub``,
    made for it, 2 of 2 runs."""
    code, output = _cli(
        "export", "casino", "--format", "chat", "--as", "nobody", "-o", str(tmp_path / "new" / "sub" / "out")
    )
    assert code == 2 and output.startswith("error: casino conversation 938 has no participant 'nobody'")
    assert sorted(os.listdir(tmp_path)) == []
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("kept\n", encoding="utf-8")
    assert (
        _cli(
            "export", "casino", "--format", "chat", "--as", "nobody", "-o", str(tmp_path / "mine" / "a" / "b")
        )[0]
        == 2
    )
    assert sorted(os.listdir(tmp_path)) == ["mine"] and os.listdir(tmp_path / "mine") == ["keep.txt"]


def test_a_folder_that_cannot_be_made_leaves_none_of_those_made_above_it(built: Bank, tmp_path: Path) -> None:
    """Before: ``-o x/y/<300 characters>/z`` made ``x/y``, then failed (the name too long)
    and left them behind, 2 of 2 runs: the folders were made before the export's cleanup
    held, which also stopped at the first folder never made."""
    long = "a" * 300
    with pytest.raises(OSError, match="File name too long"):
        export(load("casino", split="valid"), "chat", tmp_path / "x" / "y" / long / "z")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("fmt", "folder"), [("convokit", "casino_convokit"), ("hf", "casino/default")])
def test_a_file_put_into_an_exports_folder_is_not_replaced_by_the_same_export(
    built: Bank, tmp_path: Path, fmt: str, folder: str
) -> None:
    """Before: ``notes.txt`` put into ``casino_convokit/`` (or ``casino/default/``) was deleted
    by the same export run again, exit 0, though a file convbank did not write needs
    ``--overwrite`` (2 of 2 formats). The record lists the files each folder export wrote."""
    export(load("casino", split="valid"), fmt, tmp_path / "out")
    export(load("casino", split="valid"), fmt, tmp_path / "out")  # the same again: replaced
    notes = tmp_path / "out" / folder / "notes.txt"
    notes.write_text("mine\n", encoding="utf-8")
    with pytest.raises(ExportError) as caught:
        export(load("casino", split="valid"), fmt, tmp_path / "out")
    assert str(caught.value) == (
        f"{notes} exists and convbank did not write it there; the {fmt} export of casino "
        "(default/valid) would replace it: pass --overwrite (overwrite=True), or export into another folder"
    )
    assert notes.read_text(encoding="utf-8") == "mine\n"
    export(load("casino", split="valid"), fmt, tmp_path / "out", overwrite=True)
    assert not notes.exists()


@pytest.mark.parametrize("under", ["", "sub"])
def test_a_link_to_nothing_where_the_exports_folder_goes_is_one_line(
    built: Bank, tmp_path: Path, under: str
) -> None:
    """Before: ``-o dangling`` (a symbolic link to nothing) and ``-o dangling/sub`` were
    ``dangling: File exists; check that the path exists and can be written``, exit 1 (2 of 2)."""
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    output = tmp_path / "dangling" / under if under else tmp_path / "dangling"
    with pytest.raises(ExportError) as caught:
        export(load("casino", split="valid"), "chat", output)
    where = "there" if not under else f"{output} under it"
    assert str(caught.value) == (
        f"{tmp_path / 'dangling'} is a symbolic link to nothing; the export writes a folder {where}"
    )
    assert sorted(os.listdir(tmp_path)) == ["dangling"]


@pytest.mark.parametrize("under", ["", "sub", "sub/deeper"])
def test_a_file_where_the_exports_folder_or_one_above_it_goes_is_one_line(
    built: Bank, tmp_path: Path, under: str
) -> None:
    """A file at the output folder, or at a folder above it the export would make its own in,
    is one line naming that file, exit 2, the file kept (before: ``-o FILE/sub`` exited 1
    with the system's "Not a directory", where ``-o FILE`` exited 2, click's usage error)."""
    in_the_way = tmp_path / "notes.txt"
    in_the_way.write_text("mine\n")
    output = in_the_way / under if under else in_the_way
    with pytest.raises(ExportError) as caught:
        export(load("casino"), "jsonl", output)
    where = f"{output} under it" if under else "there"
    assert str(caught.value) == f"{in_the_way} is a file; the export writes a folder {where}"
    if under:  # -o FILE is click's usage error, exit 2 too
        code, said = _cli("export", "casino", "--format", "jsonl", "-o", str(output))
        assert (code, said) == (2, f"error: {caught.value}\n")
    assert os.listdir(tmp_path) == ["notes.txt"] and in_the_way.read_text() == "mine\n"


def test_predictions_into_the_bank_are_refused(built: Bank, tmp_path: Path) -> None:
    """Pass 16. Before: ``bench casino-strategy -m random --write-predictions
    $CONVBANK_HOME/bank/manifest.json`` replaced the manifest with predictions, exit 0, every
    later command exit 4 (2 of 2 tries), where ``report -o`` there is refused. Now one line,
    exit 2, before the model runs; ``write_predictions`` refuses it too."""
    from convbank.bench import write_predictions
    from convbank.errors import BenchError

    manifest = built.root / "manifest.json"
    before = manifest.read_bytes()
    for target in (manifest, built.root / ".." / "bench" / "mine.parquet"):
        result = CliRunner().invoke(
            cli, ["bench", "casino-strategy", "-m", "random", "--write-predictions", str(target)]
        )
        where = (
            f"in the bank ({built.root})"
            if target == manifest
            else f"under CONVBANK_HOME ({built.root.parent / 'bench'})"
        )
        assert (result.exit_code, result.stderr) == (
            2,
            f"error: {target}: predictions may not be written {where}, where convbank keeps its own "
            "files; name a file elsewhere\n",
        )
        assert "folds" not in result.output
    with pytest.raises(BenchError, match="predictions may not be written in the bank"):
        write_predictions(manifest, {"543/0": []})
    assert manifest.read_bytes() == before
    assert not (built.root.parent / "bench" / "mine.parquet").exists()


def test_a_device_as_the_output_folder_is_said_to_be_a_device(built: Bank) -> None:
    """``-o /dev/null`` is one line calling it a device, exit 2, nothing written (before:
    ``/dev/null is a file``, 2 of 2 runs)."""
    with pytest.raises(ExportError) as caught:
        export(load("casino"), "jsonl", Path("/dev/null"))
    assert str(caught.value) == "/dev/null is a device; the export writes a folder there"
    assert _cli("export", "casino", "--format", "chat", "-o", "/dev/null/sub") == (
        2,
        "error: /dev/null is a device; the export writes a folder /dev/null/sub under it\n",
    )
