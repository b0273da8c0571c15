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


def test_export_and_bench_export_show_a_folders_control_characters_as_escapes(
    built: object, tmp_path: Path
) -> None:
    """Pass 18. Before: ``export -o $'x\\x1b[2J\\ny'`` printed each path written raw, broken in
    two at the newline, ``ESC[2J`` stripped from a pipe (so another folder's path, ``x\\ny``),
    and ``bench --export`` its ``41 files in`` line so; 2 of 2 runs each."""
    out = tmp_path / HOSTILE
    done = CliRunner().invoke(
        cli, ["export", "casino", "--format", "chat", "--split", "test", "-o", str(out)]
    )
    assert (done.exit_code, done.stdout) == (0, f"{tmp_path}/{SHOWN}/casino_default_test.chat.jsonl\n")
    assert (out / "casino_default_test.chat.jsonl").is_file()
    done = CliRunner().invoke(cli, ["bench", "casino-strategy", "--export", str(out)])
    assert (done.exit_code, done.stdout) == (0, f"41 files in {tmp_path}/{SHOWN}/casino-strategy\n")
