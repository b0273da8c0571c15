"""Sources verified by content every time they are used (issue 26.3): a remembered source
(``sources.json``) or a cached download edited in place with its mtime restored is refused
with the checksum error, and an explicit ``--source`` folder wins or fails: what stands in a
file's place there (a folder, a dangling link, a link loop, a FIFO, ``/dev/zero``) is named,
never passed over for a remembered copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.cli import cli
from testsupport import SHARED

CASINO = catalog.get("casino")
VALID = CASINO.file("casino_valid.json")


def invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


def _edit_in_place(path: Path) -> None:
    """Change 6 bytes of a file without changing its size, then restore its times."""
    st = path.stat()
    where = path.read_bytes().index(b"Extremely satisfied")
    with path.open("r+b") as f:
        f.seek(where)
        f.write(b"EXTREM")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    shutil.copytree(SHARED / "casino", folder)
    return folder


def _count(split: str) -> str:
    query = f"SELECT count(*) AS n FROM turns WHERE split = '{split}'"
    code, output = invoke("query", query, "--format", "csv")
    assert code == 0, output
    return output


def test_a_remembered_source_edited_in_place_is_refused(src: Path) -> None:
    assert invoke("build", "casino", "--source", src)[0] == 0
    before = _count("valid")
    _edit_in_place(src / VALID.name)
    code, output = invoke("build", "casino")  # the remembered folder, no --source
    assert code == 2, output
    assert output.startswith(f"error: {src / VALID.name}: sha256 ")
    assert f"does not match the expected {VALID.sha256} (remembered source)" in output
    assert output.count("\n") == 1
    assert _count("valid") == before  # the old bank is kept
    code, output = invoke("build", "casino", "--no-verify")  # the user's own choice
    assert code == 0, output
    edited = "SELECT count(*) AS n FROM participants WHERE meta::VARCHAR LIKE '%EXTREMely%'"
    assert invoke("query", edited, "--format", "csv") == (0, "n\n1\n")  # the edited text


def test_a_cached_download_edited_in_place_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "home" / "downloads" / "casino"
    shutil.copytree(SHARED / "casino", cache)
    assert invoke("build", "casino")[0] == 0
    _edit_in_place(cache / VALID.name)
    code, output = invoke("build", "casino")
    assert code == 2, output
    assert output.startswith(f"error: {cache / VALID.name}: sha256 ")
    assert f"(cached copy in {cache})" in output and output.count("\n") == 1


STAND_INS = {
    "a folder": lambda p: p.mkdir(),
    "a symbolic link to nothing": lambda p: p.symlink_to(p.parent / "nowhere"),
    "a symbolic link loop": lambda p: p.symlink_to(p),
    "a FIFO (named pipe)": os.mkfifo,
    "a device": lambda p: p.symlink_to("/dev/zero"),
}


@pytest.mark.parametrize("kind", list(STAND_INS))
@pytest.mark.parametrize("remembered", [True, False], ids=["remembered", "fresh"])
def test_a_source_folder_wins_or_fails(src: Path, tmp_path: Path, kind: str, remembered: bool) -> None:
    if remembered:  # an older copy is remembered from an earlier build
        assert invoke("build", "casino", "--source", src)[0] == 0
    other = tmp_path / "other"
    shutil.copytree(src, other)
    place = other / VALID.name
    place.unlink()
    STAND_INS[kind](place)
    code, output = invoke("build", "casino", "--source", other)
    assert (code, output.splitlines()[0]) == (
        3,
        f"not built casino/default: {place}: is {kind}, not the file {VALID.name} that casino needs; remove or rename "
        f"{'the folder' if kind == 'a folder' else 'it'}, or put the publisher's file from {VALID.url} "
        "there",
    )


def test_a_source_folder_without_the_files_is_not_passed_over(src: Path, tmp_path: Path) -> None:
    """Before: `build casino --source B` (B without casino's files) built from the folder
    remembered from an earlier build, rc 0, without a word."""
    assert invoke("build", "casino", "--source", src)[0] == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    code, output = invoke("build", "casino", "--source", empty)
    assert code == 3, output
    assert output.splitlines()[-2] == (
        "not built casino/default: casino: 3 files are not available offline (CONVBANK_OFFLINE is set): "
        "casino_train.json, casino_valid.json, casino_test.json; download them from the URLs `convbank info "
        f"casino` lists and put them in {tmp_path / 'home' / 'downloads' / 'casino'} or in a folder given "
        f"with --source (not in the source folders {empty}, {empty / 'casino'}; the copy remembered at "
        f"{src / 'casino_train.json'} is used only without --source)"
    )
    assert invoke("build", "casino")[0] == 0  # without --source, the remembered folder


def test_a_source_used_without_verifying_never_replaces_a_verified_one(src: Path, tmp_path: Path) -> None:
    """A file used with --no-verify is the user's choice for that command, never remembered
    in place of a verified copy still there (before: it replaced the remembered path, and the
    next plain `build casino` failed its checksum on it, 2 of 2 runs)."""
    assert invoke("build", "casino", "--source", src)[0] == 0
    edited = tmp_path / "edited"
    shutil.copytree(src, edited)
    _edit_in_place(edited / VALID.name)
    assert invoke("build", "casino", "--source", edited, "--no-verify")[0] == 0
    code, output = invoke("build", "casino")  # the verified folder, remembered
    assert code == 0, output
    query = "SELECT count(*) AS n FROM participants WHERE meta::VARCHAR LIKE '%EXTREMely%'"
    assert invoke("query", query, "--format", "csv") == (0, "n\n0\n")  # the publisher's text


@pytest.mark.parametrize("name", ["a" * 300, "a/" * 2100])
def test_a_remembered_path_that_cannot_be_looked_at_is_not_there(tmp_path: Path, name: str) -> None:
    """A `sources.json` path too long to look at (a name of 300 bytes, a path of 4,200) is a copy
    no longer there, as a moved one is (before: `error: /tmp/...: File name too long; check that
    the path exists and can be written`, exit 1, from `list`, `info` and `fetch`, 2 of 2 paths)."""
    import json

    from convbank.fetch import Fetcher

    home = tmp_path / "home"
    home.mkdir()
    (home / "sources.json").write_text(json.dumps({"casino/casino_valid.json": {"path": f"/tmp/{name}"}}))
    assert Fetcher(root=home, offline=True).find_local(CASINO, VALID) is None
    assert invoke("info", "casino")[0] == 0


def test_a_source_folder_whose_name_is_too_long_holds_no_file(tmp_path: Path) -> None:
    """A `--source` (or `CONVBANK_SOURCE`) folder whose name is too long for any file to have is
    one that does not exist (before: `error: /tmp/...: File name too long; check that the path
    exists and can be written`, exit 1, for `--source`, `CONVBANK_SOURCE` and a path of 4,200
    bytes alike, 3 of 3, 2 of 2 runs)."""
    from convbank.errors import OfflineError
    from convbank.fetch import Fetcher

    folder = tmp_path / ("c" * 300)
    assert invoke("fetch", "casino", "--source", folder) == (
        2,
        f"error: source folder {folder} does not exist; check the --source path\n",
    )
    with pytest.raises(OfflineError):
        Fetcher(sources=[folder], root=tmp_path / "home", offline=True).get(CASINO, VALID)


def test_a_huge_file_in_a_sources_place_is_refused_unread(tmp_path: Path) -> None:
    """A file of another size than the published one, where a source folder, a remembered
    path or the cache has it, is refused by its size, unread: a 4 GiB sparse file costs a
    ``stat`` (before: it was hashed whole, 20 GiB past a minute, the command stopped only by
    a signal; 2 of 2 runs)."""
    import time

    from convbank.errors import ChecksumError
    from convbank.fetch import Fetcher

    (tmp_path / VALID.name).touch()
    os.truncate(tmp_path / VALID.name, 4 << 30)
    started = time.monotonic()
    with pytest.raises(ChecksumError) as caught:
        Fetcher(sources=[tmp_path], root=tmp_path / "home", progress=False).get(CASINO, VALID)
    assert time.monotonic() - started < 1.0
    assert str(caught.value) == (
        f"{tmp_path / VALID.name}: 4,294,967,296 bytes, not the 112,116 of the publisher's file (sha256 "
        f"{VALID.sha256}) (local source); replace it with the publisher's file from {VALID.url}, or pass "
        "--no-verify"
    )
