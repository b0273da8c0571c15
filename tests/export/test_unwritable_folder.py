"""An export's folder in which nothing can be made (made read-only after an export, whose
lock is there) is said as itself. Before (pass 19): ``error: out/.convbank-staging.18330.
u5mu9bow.tmp: Operation not permitted; ...``, a staging folder no one saw and that is not
there, 2 of 2 tries (``chattr +i out``; ``chmod a-w out`` for another user than root)."""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from convbank.cli.main import cli
from convbank.store import Bank


def test_a_folder_where_no_staging_folder_can_be_made_is_named_itself(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    command = ["export", "casino", "--split", "valid", "--format", "chat", "-o", str(out)]
    assert CliRunner().invoke(cli, command).exit_code == 0
    made = tempfile.mkdtemp

    def refused(*args: Any, dir: str | None = None, **kwargs: Any) -> str:
        if dir is not None and Path(dir) == out:  # as the system refuses it, naming the new folder
            raise PermissionError(errno.EACCES, "Permission denied", str(out / ".convbank-staging.1.x.tmp"))
        return made(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    for more in ([], ["--overwrite"]):
        done = CliRunner().invoke(cli, [*command, *more])
        assert (done.exit_code, done.stderr) == (
            1,
            f"error: {out}: Permission denied; check that the path exists and can be written\n",
        )
    assert sorted(p.name for p in out.iterdir()) == [
        ".convbank-exports.json",
        ".convbank-exports.lock",
        "casino_default_valid.chat.jsonl",
    ]


def test_a_folder_named_as_the_home_folder_is_written_where_it_is(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 19. Before: ``export --format hf -o '~'`` (a folder named ``~`` in the current
    one) handed ``~/.convbank-staging.<pid>.<random>.tmp/casino/default`` to ``datasets``,
    which read it as the home folder: the staging folder was made and left there, exit 1,
    ``No such file or directory`` (2 of 2 tries). Every writer now gets an absolute path."""
    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir()
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    done = CliRunner().invoke(cli, ["export", "casino", "--split", "valid", "--format", "hf", "-o", "~"])
    assert (done.exit_code, done.stdout) == (0, "~/casino/default\n")
    assert (here / "~" / "casino" / "default" / "dataset_dict.json").is_file()
    assert list(home.iterdir()) == []


def test_a_move_the_system_refuses_never_leaves_the_folder_failing_every_export(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 19. Before: an ``hf`` export whose move into place the system refused (``out/casino``
    a mount point: ``Invalid cross-device link``) left its journal and staging folder, so
    that every later export into the folder, ``csv`` too, retried that move and failed the
    same way, exit 1, naming the staging folder (2 of 2 tries). Now the failed export names
    its path, its journal ends, and the folder takes other exports."""
    import json
    import os

    out = tmp_path / "out"
    replace = os.replace

    def refused(src: Any, dst: Any) -> None:
        if Path(dst) == out / "casino" / "default":
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", refused)
    command = ["export", "casino", "--split", "valid", "-o", str(out), "--format"]
    done = CliRunner().invoke(cli, [*command, "hf"])
    assert (done.exit_code, done.stderr) == (
        1,
        f"error: {out}/casino/default: Invalid cross-device link; check that the path exists and can be written\n",
    )
    assert sorted(p.name for p in out.iterdir()) == [
        ".convbank-exports.json",
        ".convbank-exports.lock",
        "casino",
    ]
    assert json.loads((out / ".convbank-exports.json").read_text()) == {"exports": {}}
    assert CliRunner().invoke(cli, [*command, "csv"]).exit_code == 0
    monkeypatch.setattr(os, "replace", replace)
    assert CliRunner().invoke(cli, [*command, "hf"]).exit_code == 0
