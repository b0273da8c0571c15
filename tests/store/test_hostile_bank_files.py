"""A bank edited by hand or by another program is refused before anything reads it: the
manifest names no file outside the bank, whatever a table of it is called."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from click.testing import CliRunner

from convbank.cli import cli
from convbank.store import Bank


@pytest.mark.parametrize("table", ["..", "", "."])
def test_a_manifest_table_named_as_no_folder_is_damage(casino_home: Bank, table: str) -> None:
    """A table named ``..``, ``""`` or ``.`` in the manifest, its file's path made to match,
    is a damaged manifest in `doctor` and `query` (before: ``..`` and ``""`` read a file
    outside the bank, ``""`` at the root of the file system: `doctor` checked the copy put
    there and said the bank sound, exit 0; without it, "missing" named the path outside). Its
    advice names no `doctor`, which says this very line (before pass 20: `doctor` advised
    running `doctor`, 2 of 2 manifests)."""
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    files = manifest["datasets"]["casino"]["configs"]["default"]["files"]
    entry = dict(files["turns"]["test"])
    name = entry["path"].rsplit("/", 1)[1]
    entry["path"] = f"{table}/dataset=casino/config=default/split=test/{name}"
    files[table] = {"test": entry}
    outside = casino_home.root.parent / "dataset=casino" / "config=default" / "split=test"
    outside.mkdir(parents=True)
    shutil.copy(casino_home.root / files["turns"]["test"]["path"], outside / name)
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    for args in (["doctor"], ["query", "SELECT count(*) FROM turns"]):
        result = CliRunner().invoke(cli, args)
        assert (result.exit_code, result.output) == (
            4,
            f"error: the bank is damaged: {casino_home.manifest_path} is not a convbank manifest "
            f"(table {table!r} is not a name ("
            + (
                "it is empty"
                if table == ""
                else f"{table!r} names a folder already there (this one, its parent); a name is a folder of its own"
            )
            + ")); delete the bank folder and build again\n",
        )


def _unlisted_split(manifest: dict[str, Any], bank: Bank) -> str:
    files = manifest["datasets"]["casino"]["configs"]["default"]["files"]["turns"]
    files["zzz"] = {**files["test"], "path": files["test"]["path"].replace("split=test", "split=zzz")}
    (bank.root / files["zzz"]["path"]).parent.mkdir(parents=True)
    shutil.copy(bank.root / files["test"]["path"], bank.root / files["zzz"]["path"])
    return "names a turns file of casino/default/zzz, a split it does not list"


def _unfiled_split(manifest: dict[str, Any], bank: Bank) -> str:
    del manifest["datasets"]["casino"]["configs"]["default"]["files"]["turns"]["test"]
    return "says casino/default/test has 1,394 turns where it names no turns file"


def _listed_split_without_files(manifest: dict[str, Any], bank: Bank) -> str:
    splits = manifest["datasets"]["casino"]["configs"]["default"]["splits"]
    splits["zzz"] = splits["test"]
    return "says casino/default/zzz has 100 conversations where it names no conversations file"


@pytest.mark.parametrize("edit", [_unlisted_split, _unfiled_split, _listed_split_without_files])
def test_a_split_and_its_files_that_disagree_are_damage(casino_home: Bank, edit: Any) -> None:
    """A manifest whose splits and table files disagree (a turns file of a split it does not
    list, a split listed without its turns file or without any file) is damage in `doctor`
    and every reader (before: `doctor` said the bank sound, exit 0, and `query` counted 1,394
    turns of an unlisted split `zzz`, or none of the listed test split, as data)."""
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    problem = edit(manifest, casino_home)
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    doctor = CliRunner().invoke(cli, ["doctor", "--quick"])
    assert doctor.exit_code == 4
    assert (
        f"damaged: {casino_home.manifest_path}: {problem} (rebuild with `convbank build casino`)\n"
        in doctor.output
    )
    query = CliRunner().invoke(cli, ["query", "SELECT count(*) FROM turns"])
    assert (query.exit_code, query.output) == (
        4,
        f"error: the bank is damaged: {casino_home.manifest_path} {problem}; run `convbank doctor` to "
        "check every file, then rebuild that dataset\n",
    )


@pytest.mark.parametrize(("field", "value"), [("footer", "x"), ("footer", "AB" * 32), ("sha256", "0" * 63)])
def test_a_digest_the_manifest_misstates_is_damage(casino_home: Bank, field: str, value: str) -> None:
    """A file's sha256 or footer digest that is no sha256 in the manifest (not 64 lowercase
    hex digits) is a damaged manifest, one line, exit 4, in `show` as in every command
    (before: a footer of ``"x"`` was ``bytes.fromhex``'s ValueError traceback in `show`,
    exit 1, 1 of 60 manifest fields fuzzed with 6 values each)."""
    manifest = json.loads(casino_home.manifest_path.read_text(encoding="utf-8"))
    manifest["datasets"]["casino"]["configs"]["default"]["files"]["turns"]["test"][field] = value
    casino_home.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    result = CliRunner().invoke(cli, ["show", "casino", "1005"])
    assert (result.exit_code, result.output) == (
        4,
        f"error: the bank is damaged: {casino_home.manifest_path} is not a convbank manifest (Expected `str` "
        f"matching regex '^[0-9a-f]{{64}}$' - at `$.datasets[...].configs[...].files[...][...].{field}`); "
        "delete the bank folder and build again\n",
    )
