"""An archive member whose path the system cannot create as named (a name over 255 bytes, a
path over 4,096) is the archive's one-line refusal, nothing left in ``extracted/`` (before:
a 300-byte name blamed ``CONVBANK_HOME``, exit 5; a path of 4,275 bytes was an ``OSError``
traceback from the error's own wording, exit 1; 2 of 2 runs each)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.cli import cli
from convbank.errors import FormatError
from convbank.fetch import Fetcher

LONG = {
    "a-name-of-300-bytes": "hf_pec/" + "a" * 300,
    "a-path-over-4096-bytes": "hf_pec/" + ("d" * 250 + "/") * 17 + "x",
}


@pytest.mark.parametrize("case", sorted(LONG))
def test_a_member_path_the_system_cannot_create_refuses_the_archive(tmp_path: Path, case: str) -> None:
    name = LONG[case]
    archive = tmp_path / "src" / "hf_pec.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("hf_pec/happy/train.txt", "")
        zf.writestr(name, "x")
    pec = catalog.get("pec")
    home = tmp_path / "home"
    with pytest.raises(FormatError) as info:
        Fetcher(root=home).extract(pec, pec.file("hf_pec.zip"), archive)
    shown = f"{name[:100]}...({len(name):,} characters)"
    said = (
        f"{archive}: member {shown!r} cannot be created here (File name too long); refusing to "
        "extract this archive — re-fetch the file"
    )
    assert str(info.value) == said
    assert [p for p in (home / "extracted").rglob("*")] == []
    done = CliRunner().invoke(
        cli,
        ["build", "pec", "-c", "happy", "--source", str(archive.parent), "--no-verify"],
        env={"CONVBANK_HOME": str(home)},
    )
    assert (done.exit_code, done.output) == (2, f"error: {said}\n")
