"""A bank edited by hand or by another program is refused before anything reads it: the
manifest names no file outside the bank, whatever a table of it is called."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from convbank.cli import cli
from convbank.store import Bank


@pytest.mark.parametrize("table", ["..", "", "."])
def test_a_manifest_table_named_as_no_folder_is_damage(casino_home: Bank, table: str) -> None:
    """A table named ``..``, ``""`` or ``.`` in the manifest, its file's path made to match,
    is a damaged manifest in `doctor` and `query` (before: ``..`` and ``""`` read a file
    outside the bank, ``""`` at the root of the file system: `doctor` checked the copy put
    there and said the bank sound, exit 0; without it, "missing" named the path outside)."""
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
            + ")); run `convbank doctor`, or delete the bank folder and build again\n",
        )
