"""What fetching keeps under ``CONVBANK_HOME`` is checked before it is used: a file standing
where the download cache needs a folder is the home's one-line error (exit 5), and a checksum
recorded on first use that is not a sha256 is a one-line error naming ``checksums.json``."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.cli import cli
from convbank.datasets import SourceFile
from convbank.errors import FormatError, SetupError
from convbank.fetch import Fetcher

CASINO = catalog.get("casino")


@pytest.mark.parametrize("blocker", ["downloads", "downloads/casino"])
def test_a_file_in_place_of_the_cache_folder_is_the_home_error(tmp_path: Path, blocker: str) -> None:
    """Before: `SourceError` exit 3, `.../downloads/casino/casino_train.json: is unreadable (Not a
    directory) ... remove or rename it`, naming a file that is not there (2 of 2 runs each)."""
    home = tmp_path / "home"
    (home / blocker).parent.mkdir(parents=True, exist_ok=True)
    (home / blocker).write_text("notes", encoding="utf-8")
    said = (
        f"CONVBANK_HOME {home}: {home / blocker} is a file, not a folder; move it away or point "
        "CONVBANK_HOME at a writable folder"
    )
    with pytest.raises(SetupError) as info:
        Fetcher(root=home, offline=True).get(CASINO, CASINO.file("casino_valid.json"))
    assert str(info.value) == said
    done = CliRunner().invoke(
        cli, ["fetch", "casino"], env={"CONVBANK_HOME": str(home), "CONVBANK_OFFLINE": "1"}
    )
    assert (done.exit_code, done.output) == (5, f"error: {said}\n")


@pytest.mark.parametrize("recorded", [5, "zz", ["a"], "a" * 63], ids=["int", "not-hex", "list", "short"])
def test_a_recorded_checksum_that_is_no_sha256_is_refused(tmp_path: Path, recorded: object) -> None:
    """Before: a download compared with it, `the downloaded file's sha256 does not match the
    expected 5; ... the publisher's file may have changed` (2 of 2 values)."""
    home = tmp_path / "home"
    home.mkdir()
    url = "http://127.0.0.1:9/data_tolokers.json"
    (home / "checksums.json").write_text(json.dumps({url: recorded}), encoding="utf-8")
    unsized = SourceFile(name="data_tolokers.json", url=url, sha256=None)
    with pytest.raises(FormatError) as info:
        Fetcher(root=home, offline=False, progress=False).get(catalog.get("convai2"), unsized)
    assert str(info.value) == (
        f"{home / 'checksums.json'}: the sha256 recorded for {url} is {recorded!r}, not 64 hexadecimal "
        "digits; delete it to record anew"
    )


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (
            errno.ENOSPC,
            "{home}: no space left writing {target}; free some space or point CONVBANK_HOME at a ",
        ),
        (errno.EFBIG, "{home}: File too large: {target}; check it or point CONVBANK_HOME at a "),
    ],
    ids=["full-disk", "size-limit"],
)
def test_a_full_disk_while_downloading_is_the_home_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, said: str
) -> None:
    """The write that fails names no file: the download's is named (before: `DownloadError`
    exit 3, `download failed (OSError: [Errno 28] No space left on device); nothing was kept —
    retry`, on a real 1 MiB tmpfs, 2 of 2 runs)."""

    def write_fails(url: str, out: Path, **kw: object) -> str:
        out.write_bytes(b"half")
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr("convbank.fetch.download", write_fails)
    home = tmp_path / "home"
    unsized = SourceFile(name="data_tolokers.json", url="http://127.0.0.1:9/data_tolokers.json", sha256=None)
    with pytest.raises(SetupError) as info:
        Fetcher(root=home, offline=False, progress=False).get(catalog.get("convai2"), unsized)
    target = home / "downloads" / "convai2" / "data_tolokers.json"
    assert str(info.value) == "CONVBANK_HOME " + said.format(home=home, target=target) + "writable folder"
    assert info.value.exit_code == (1 if code == errno.ENOSPC else 5)
    assert list(target.parent.iterdir()) == []  # the half-written file went with its folder
