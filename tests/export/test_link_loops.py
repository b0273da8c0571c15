"""A folder to write into that is a loop of symbolic links (``a -> b -> a``) is one line,
exit 2, nothing written. Before (pass 18): ``export -o a``, ``export -o a/sub`` and ``bench
--export a`` were ``RuntimeError: Symlink loop from ...``, a traceback, exit 1, raised by
``Path.resolve`` while checking that the folder is not among convbank's own files, 2 of 2
runs each."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.cli.main import cli
from convbank.store import Bank


@pytest.mark.parametrize(
    ("command", "under"),
    [
        (["export", "casino", "--format", "chat", "--split", "test", "-o"], ""),
        (["export", "casino", "--format", "chat", "--split", "test", "-o"], "sub"),
        (["bench", "casino-strategy", "--export"], ""),
    ],
)
def test_a_loop_of_links_as_the_folder_is_one_line(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], under: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a").symlink_to("b")
    Path("b").symlink_to("a")
    folder = str(Path("a", under))
    done = CliRunner().invoke(cli, [*command, folder])
    there = "there" if not under else f"{folder} under it"
    assert (done.exit_code, done.output) == (
        2,
        f"error: a is a symbolic link to nothing; the export writes a folder {there}\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
