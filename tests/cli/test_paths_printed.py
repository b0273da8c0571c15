"""A path that convbank prints (``where``, ``fetch``'s list of files, ``build``'s bank) holding
a control character or a newline (``CONVBANK_HOME``, a ``--source`` folder) is shown with
escapes on its one line: the terminal is never driven by it and no line is broken in two
(before: click sent ``ESC[2J`` raw to a terminal, and stripped it from a pipe, printing
another folder's path, ``/tmp/.../eschome``; a newline broke ``where``'s lines, 2 of 2 runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli.main import cli
from testsupport import SHARED

HOSTILE = "a\x1b[2J\nb\tc"
SHOWN = "a\\x1b[2J\\nb\\tc"


def test_where_shows_a_homes_control_characters_as_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / HOSTILE))
    done = CliRunner().invoke(cli, ["where"])
    home = f"{tmp_path}/{SHOWN}"
    assert (done.exit_code, done.output) == (
        0,
        f"home\t{home}\ndownloads\t{home}/downloads\nbank\t{home}/bank\n",
    )


def test_fetch_shows_a_source_folders_control_characters_as_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / HOSTILE
    source.mkdir()
    for name in ("casino_train.json", "casino_valid.json", "casino_test.json"):
        (source / name).symlink_to(SHARED / "casino" / name)
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    done = CliRunner().invoke(cli, ["fetch", "casino", "--source", str(source)])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        f"{name}\t{tmp_path}/{SHOWN}/{name}"
        for name in ("casino_train.json", "casino_valid.json", "casino_test.json")
    ]


def test_report_and_export_show_the_paths_they_wrote_with_escapes(built: object, tmp_path: Path) -> None:
    """Before: ``report -o`` and ``export -o`` printed the path they wrote as it is: ESC[2J
    raw to a terminal (stripped from a pipe) and the newline breaking it in two lines, 2 of 2
    runs each. ``bench --export`` and ``new-dataset`` print theirs through the same escapes."""
    folder = tmp_path / HOSTILE
    folder.mkdir()
    done = CliRunner().invoke(cli, ["report", "casino", "--no-validate", "-o", str(folder / "r.html")])
    assert (done.exit_code, done.stdout) == (0, f"{tmp_path}/{SHOWN}/r.html\n"), done.output
    done = CliRunner().invoke(
        cli, ["export", "casino", "--format", "csv", "--split", "valid", "-o", str(folder / "e")]
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [f"{tmp_path}/{SHOWN}/e/casino_default_valid.turns.csv"]
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--export", str(folder / "b")])
    assert (done.exit_code, done.stdout) == (0, f"41 files in {tmp_path}/{SHOWN}/b/casino-strategy\n")
