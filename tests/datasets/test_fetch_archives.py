"""Hardening of fetching: archives extracted per content (sha256) and hashed once per process,
limits on what an archive may expand to (checked before and while extracting), refused links,
escaping and colliding members, nothing left behind, no lock files beside the data; an
unwritable CONVBANK_HOME as a SetupError; a folder where a source file belongs, named."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import re
import shutil
import stat
import threading
import zipfile
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner

import convbank
from convbank import catalog, fetch, settings
from convbank.cli import cli
from convbank.datasets import SourceFile
from convbank.errors import FormatError, SetupError, SourceError
from convbank.fetch import Fetcher, extract_limits, home_error
from testsupport import SHARED, blocked_home

PEC = catalog.get("pec")
ARCHIVE = PEC.file("hf_pec.zip")
CASINO = catalog.get("casino")
WHEN = 1_600_000_000 * 10**9  # one mtime for every archive of the stale-extraction test
LIMITS = "refusing to extract this archive — re-fetch the file"


def _zip(path: Path, members: dict[str, str | bytes], *, links: tuple[str, ...] = ()) -> Path:
    """A zip with fixed member dates (so equal contents give equal sizes); ``links`` are
    members marked as symbolic links."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in links:
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, data)
    return path


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fetcher(home: Path, src: Path, **kw: Any) -> Fetcher:
    return Fetcher(sources=[src], root=home, progress=False, **kw)


def run(*args: object) -> click.testing.Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files convbank hashes, in order; a fresh process (nothing hashed yet)."""
    calls: list[Path] = []
    real = fetch.sha256_of

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(fetch, "sha256_of", counting)
    monkeypatch.setattr(fetch, "_HASHES", {}, raising=False)
    return calls


# ---------------------------------------------------------------------- 7. stale extraction
def test_replaced_archive_of_same_size_and_mtime_is_read_anew(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    archive = _zip(src / "hf_pec.zip", {"hf_pec/happy/train.txt": "first\n"})
    os.utime(archive, ns=(WHEN, WHEN))
    first = _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"]
    assert (first / "happy" / "train.txt").read_text() == "first\n"
    size, old_sha = archive.stat().st_size, _sha(archive)

    _zip(archive, {"hf_pec/happy/train.txt": "other\n"})  # rewritten in place, as cp does
    os.utime(archive, ns=(WHEN, WHEN))
    assert (archive.stat().st_size, archive.stat().st_mtime_ns) == (size, WHEN)
    monkeypatch.setattr(fetch, "_HASHES", {}, raising=False)  # the next run is a new process
    second = _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"]
    assert (second / "happy" / "train.txt").read_text() == "other\n"
    new_sha = _sha(archive)
    assert new_sha != old_sha
    assert second == home / "extracted" / "pec" / "hf_pec.zip" / new_sha / "hf_pec"
    assert _tree(home / "extracted") == [  # the superseded extraction is gone
        "pec",
        "pec/hf_pec.zip",
        f"pec/hf_pec.zip/{new_sha}",
        f"pec/hf_pec.zip/{new_sha}/.convbank-extracted.json",  # the state of what was extracted
        f"pec/hf_pec.zip/{new_sha}/hf_pec",
        f"pec/hf_pec.zip/{new_sha}/hf_pec/happy",
        f"pec/hf_pec.zip/{new_sha}/hf_pec/happy/train.txt",
    ]

    # replaced within the same process (a new file renamed over it): hashed anew, not remembered
    staged = _zip(tmp_path / "staged.zip", {"hf_pec/happy/train.txt": "third\n"})
    os.utime(staged, ns=(WHEN, WHEN))
    os.replace(staged, archive)
    third = _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"]
    assert (third / "happy" / "train.txt").read_text() == "third\n"


@pytest.mark.parametrize("edit", ["rewrite", "rename", "truncate", "link", "fifo", "added", "removed"])
def test_an_edited_extraction_is_made_anew_from_the_verified_archive(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    """The cached extraction of a verified archive is used only as it was extracted. Before:
    a file of it edited (written in place, renamed over, truncated, a link or a FIFO put in
    its place) was read as the publisher's, with verification on, its archive's sha256 the
    only check (7 of 7 edits built); now it is extracted again from the verified archive."""
    src = tmp_path / "src"
    archive = _zip(
        src / "hf_pec.zip", {"hf_pec/happy/train.txt": "published\n", "hf_pec/happy/test.txt": "t\n"}
    )
    published = SourceFile(name="hf_pec.zip", url=ARCHIVE.url, sha256=_sha(archive), extract_to="hf_pec")
    folder = _fetcher(home, src).fetch(PEC, [published])["hf_pec.zip"]
    train = folder / "happy" / "train.txt"
    elsewhere = tmp_path / "edited.txt"
    elsewhere.write_text("EDITED!!!\n")
    if edit == "rewrite":
        train.write_text("EDITED!!!\n")
    elif edit == "rename":
        os.replace(shutil.copy(elsewhere, folder / "new.txt"), train)
    elif edit == "truncate":
        os.truncate(train, 3)
    elif edit == "link":
        train.unlink()
        train.symlink_to(elsewhere)
    elif edit == "fifo":
        train.unlink()
        os.mkfifo(train)
    elif edit == "added":
        (folder / "happy" / "valid.txt").write_text("added\n")
    else:
        (folder / "happy" / "test.txt").unlink()
    monkeypatch.setattr(fetch, "_HASHES", {}, raising=False)  # the next command is a new process
    again = _fetcher(home, src).fetch(PEC, [published])["hf_pec.zip"]
    assert again == folder
    assert _tree(folder) == ["happy", "happy/test.txt", "happy/train.txt"]
    assert (train.read_text(), (folder / "happy" / "test.txt").read_text()) == ("published\n", "t\n")
    assert not train.is_symlink()


def test_a_verified_archive_is_hashed_once_per_process(
    tmp_path: Path, home: Path, hashed: list[Path]
) -> None:
    src = tmp_path / "src"
    archive = _zip(src / "hf_pec.zip", {"hf_pec/happy/train.txt": "x\n"})
    published = SourceFile(name="hf_pec.zip", url=ARCHIVE.url, sha256=_sha(archive), extract_to="hf_pec")
    fetcher = _fetcher(home, src)  # verifies local sources
    happy = fetcher.fetch(PEC, [published])  # a PEC build fetches once per config
    offmychest = fetcher.fetch(PEC, [published])
    assert hashed == [archive]  # verified once; the extraction reused that hash
    assert happy == offmychest == {"hf_pec.zip": home / "extracted/pec/hf_pec.zip" / _sha(archive) / "hf_pec"}

    hashed.clear()
    _fetcher(home, src, verify=False).fetch(PEC, [published])
    assert hashed == []  # still unchanged since this process hashed it


def test_a_replaced_local_archive_fails_verification(tmp_path: Path, home: Path, hashed: list[Path]) -> None:
    src = tmp_path / "src"
    archive = _zip(src / "hf_pec.zip", {"hf_pec/happy/train.txt": "x\n"})
    published = SourceFile(name="hf_pec.zip", url=ARCHIVE.url, sha256=_sha(archive), extract_to="hf_pec")
    fetcher = _fetcher(home, src)
    fetcher.fetch(PEC, [published])
    staged = _zip(tmp_path / "staged.zip", {"hf_pec/happy/train.txt": "y\n"})
    os.replace(staged, archive)  # same size, another file
    with pytest.raises(convbank.ChecksumError, match=r"does not match the expected " + published.sha256):
        fetcher.fetch(PEC, [published])
    assert hashed == [archive, archive]


def test_an_extracted_folder_is_used_only_unverified(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder standing for an archive has no sha256 to check: with verification on it is
    refused, found in a source folder or remembered from an unverified run, never trusted."""
    src = tmp_path / "src"
    (src / "hf_pec" / "happy").mkdir(parents=True)
    (src / "hf_pec" / "happy" / "train.txt").write_text("x\n")
    refused = (
        f"{src / 'hf_pec'}: an extracted folder stands for hf_pec.zip (pec), and a folder cannot be "
        "checked against the archive's sha256; put the publisher's hf_pec.zip from "
        f"{ARCHIVE.url} in its place, or pass --no-verify to use the folder unchecked"
    )
    with pytest.raises(convbank.ChecksumError) as caught:
        _fetcher(home, src).fetch(PEC, [ARCHIVE])
    assert str(caught.value) == refused
    assert _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE]) == {"hf_pec.zip": src / "hf_pec"}
    remembered = Fetcher(verify=True, offline=True, root=home, progress=False)  # no --source now
    with pytest.raises(convbank.ChecksumError) as caught:
        remembered.fetch(PEC, [ARCHIVE])
    assert str(caught.value) == refused
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    shown = json.loads(run("info", "pec", "--json").output)["files"][0]
    assert (shown["present"], shown["folder"]) == (str(src / "hf_pec"), True)
    assert f"{src / 'hf_pec'} (a folder: used only with --no-verify)" in run("info", "pec").output
    assert Fetcher(verify=False, offline=True, root=home, progress=False).fetch(PEC, [ARCHIVE]) == {
        "hf_pec.zip": src / "hf_pec"
    }


class _Zips(http.server.BaseHTTPRequestHandler):
    body: ClassVar[bytes] = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def zip_server(tmp_path: Path) -> Iterator[tuple[str, bytes]]:
    """A loopback server that serves one small PEC-shaped zip at any path."""
    _Zips.body = _zip(tmp_path / "served.zip", {"hf_pec/happy/train.txt": "served\n"}).read_bytes()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Zips)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/hf_pec.zip", _Zips.body
    httpd.shutdown()


def test_downloaded_archive_is_not_hashed_again_and_no_locks_lie_beside_the_data(
    home: Path, hashed: list[Path], zip_server: tuple[str, bytes]
) -> None:
    url, body = zip_server
    sha = hashlib.sha256(body).hexdigest()
    published = SourceFile(name="hf_pec.zip", url=url, sha256=sha, extract_to="hf_pec")
    fetcher = Fetcher(root=home, offline=False, progress=False)
    folder = fetcher.fetch(PEC, [published])["hf_pec.zip"]
    assert (folder / "happy" / "train.txt").read_text() == "served\n"
    assert hashed == []  # hashed as it was downloaded; extraction reused its checksum
    assert _tree(home / "downloads") == ["pec", "pec/hf_pec.zip"]
    assert [p for p in _tree(home / "extracted") if p.endswith(".lock")] == []
    assert _tree(home / "locks") == ["pec", "pec/hf_pec.zip.download.lock", "pec/hf_pec.zip.extract.lock"]


def test_stale_temp_and_superseded_and_old_layout_extractions_are_removed(tmp_path: Path, home: Path) -> None:
    src = tmp_path / "src"
    archive = _zip(src / "hf_pec.zip", {"hf_pec/happy/train.txt": "now\n"})
    sha = _sha(archive)
    area = home / "extracted" / "pec"
    for leftover in (
        "hf_pec.zip/.extract-k2j4h1/hf_pec/happy/train.txt",  # an interrupted extraction
        f"hf_pec.zip/{'0' * 64}/hf_pec/happy/train.txt",  # a superseded archive
        "1234-1600000000/hf_pec/happy/train.txt",  # convbank 0.1's size-mtime layout
    ):
        (area / leftover).parent.mkdir(parents=True)
        (area / leftover).write_text("old\n")
    (area / "1234-1600000000.lock").write_text("")
    cached_lock = home / "downloads" / "casino" / "casino_valid.json.lock"  # 0.1 kept it there
    cached_lock.parent.mkdir(parents=True)
    shutil.copy(SHARED / "casino" / "casino_valid.json", cached_lock.parent)
    cached_lock.write_text("")

    folder = _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"]
    assert (folder / "happy" / "train.txt").read_text() == "now\n"
    assert _tree(area) == [
        "hf_pec.zip",
        f"hf_pec.zip/{sha}",
        f"hf_pec.zip/{sha}/.convbank-extracted.json",
        f"hf_pec.zip/{sha}/hf_pec",
        f"hf_pec.zip/{sha}/hf_pec/happy",
        f"hf_pec.zip/{sha}/hf_pec/happy/train.txt",
    ]
    Fetcher(root=home, progress=False).get(CASINO, CASINO.file("casino_valid.json"))
    assert _tree(home / "downloads") == ["casino", "casino/casino_valid.json"]

    # a leftover appearing beside a finished extraction is removed on the next use too
    (area / "hf_pec.zip" / ".extract-zz").mkdir()
    assert _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"] == folder
    assert sorted(p.name for p in (area / "hf_pec.zip").iterdir()) == [sha]


def test_existing_extraction_is_used_when_the_home_cannot_be_written(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    _zip(src / "hf_pec.zip", {"hf_pec/happy/train.txt": "kept\n"})
    folder = _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"]
    leftover = folder.parent.parent / ".extract-left"
    leftover.mkdir()

    def read_only(self: Fetcher, *args: object) -> None:
        raise OSError(30, "Read-only file system", str(home / "locks" / "pec"))

    monkeypatch.setattr(Fetcher, "_lock", read_only)
    assert _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])["hf_pec.zip"] == folder
    assert leftover.is_dir()  # cleaned on a later, writable run
    _zip(src / "hf_pec.zip", {"hf_pec/happy/train.txt": "replaced\n"})  # not extracted: an error
    with pytest.raises(SetupError, match=r"is not writable \(Read-only file system: "):
        _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])


# ---------------------------------------------------------------------- 8. limits, leftovers
def test_zip_bomb_is_refused_before_extracting_and_leaves_nothing(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVBANK_EXTRACT_MAX_BYTES", "1M")
    archive = _zip(tmp_path / "src" / "hf_pec.zip", {"hf_pec/happy/train.txt": bytes(4 << 20)})
    assert archive.stat().st_size < 10_000  # 4 MiB of zeros, deflated
    with pytest.raises(FormatError) as info:
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == (
        f"{archive}: would expand to 4,194,304 bytes, more than the 1,048,576 allowed "
        "(CONVBANK_EXTRACT_MAX_BYTES, by default 20 times the archive's size); refusing to extract "
        "this archive — re-fetch the file, or raise the limit if it is the publisher's"
    )
    assert _tree(home / "extracted") == []


def test_default_cap_is_twenty_times_the_archive_and_at_least_64_mib(tmp_path: Path, home: Path) -> None:
    archive = _zip(tmp_path / "src" / "hf_pec.zip", {"hf_pec/happy/train.txt": bytes((64 << 20) + 1)})
    assert archive.stat().st_size * 20 < 64 << 20
    with pytest.raises(
        FormatError, match=r"would expand to 67,108,865 bytes, more than the 67,108,864 allowed"
    ):
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert _tree(home / "extracted") == []


@pytest.mark.parametrize(
    ("env", "archive_size", "expected"),
    [
        ({}, 252_434_681, (5_048_693_620, 10_000)),  # PEC's real archive: about 4.7 GiB
        ({}, 1_000_000, (64 << 20, 10_000)),
        ({"CONVBANK_EXTRACT_MAX_BYTES": "8G"}, 1, (8 << 30, 10_000)),
        ({"CONVBANK_EXTRACT_MAX_BYTES": "500 MiB", "CONVBANK_EXTRACT_MAX_MEMBERS": "20"}, 1, (500 << 20, 20)),
        ({"CONVBANK_EXTRACT_MAX_BYTES": "123"}, 10**9, (123, 10_000)),
    ],
)
def test_extract_limits(
    env: dict[str, str], archive_size: int, expected: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert extract_limits(archive_size) == expected


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "CONVBANK_EXTRACT_MAX_BYTES",
            "lots",
            "CONVBANK_EXTRACT_MAX_BYTES='lots' is not a size in bytes, optionally with K, M, G or T "
            "(powers of 1024), e.g. 8G; fix or unset it",
        ),
        (
            "CONVBANK_EXTRACT_MAX_MEMBERS",
            "0",
            "CONVBANK_EXTRACT_MAX_MEMBERS='0' is not a positive whole number; fix or unset it",
        ),
        (
            "CONVBANK_OFFLINE",
            "maybe",
            "CONVBANK_OFFLINE='maybe' is neither true (1, true, yes, on) nor false (0, false, no, off); "
            "fix or unset it",
        ),
    ],
)
def test_bad_settings_are_one_line_setup_errors(
    tmp_path: Path, home: Path, name: str, value: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad CONVBANK_* value stops every command at its start (exit 5), also one that would
    never have used it (``list``, ``where``), and the code that reads it."""
    monkeypatch.setenv(name, value)
    with pytest.raises(SetupError) as info:
        settings.check()
    assert str(info.value) == message
    if name != "CONVBANK_OFFLINE":
        with pytest.raises(SetupError, match=f"^{re.escape(message)}$"):
            extract_limits(1)
    _zip(tmp_path / "src" / "hf_pec.zip", {"hf_pec/happy/train.txt": "x\n"})
    for command in (["fetch", "pec", "--source", tmp_path / "src", "--no-verify"], ["list"], ["where"]):
        result = run(*command)
        assert (result.exit_code, result.stderr) == (5, f"error: {message}\n"), command
    monkeypatch.setenv(name, "1")
    assert run("where").exit_code == 0


def test_too_many_members(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBANK_EXTRACT_MAX_MEMBERS", "3")
    archive = _zip(tmp_path / "src" / "hf_pec.zip", {f"hf_pec/happy/{i}.txt": "x" for i in range(5)})
    with pytest.raises(FormatError) as info:
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == (
        f"{archive}: 5 members, more than the 3 allowed (CONVBANK_EXTRACT_MAX_MEMBERS); refusing to "
        "extract this archive — re-fetch the file, or raise the limit if it is the publisher's"
    )
    assert _tree(home / "extracted") == []


def _lie_about_size(archive: Path, member: str, size: int) -> None:
    """Set the uncompressed size that the central directory and the local header give for
    ``member`` (CRC and data unchanged)."""
    data = bytearray(archive.read_bytes())
    name = member.encode()
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = data.find(signature)
        while at != -1:
            name_at = at + (46 if signature == b"PK\x01\x02" else 30)
            if data[name_at : name_at + len(name)] == name:
                data[at + offset : at + offset + 4] = size.to_bytes(4, "little")
            at = data.find(signature, at + 4)
    archive.write_bytes(bytes(data))


def test_zip_whose_directory_lies_about_sizes_is_refused_while_streaming(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVBANK_EXTRACT_MAX_BYTES", "1M")
    archive = _zip(
        tmp_path / "src" / "hf_pec.zip",
        {"hf_pec/happy/valid.txt": "fine\n", "hf_pec/happy/train.txt": bytes(4 << 20)},
    )
    _lie_about_size(archive, "hf_pec/happy/train.txt", 100)
    assert [i.file_size for i in zipfile.ZipFile(archive).infolist()] == [5, 100]  # passes the cap
    with pytest.raises(FormatError) as info:
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == (
        f"{archive}: member 'hf_pec/happy/train.txt' is corrupt or does not match the archive's "
        f"directory (Bad CRC-32 for file 'hf_pec/happy/train.txt'); {LIMITS}"
    )
    assert _tree(home / "extracted") == []


def test_streaming_stops_a_member_that_outgrows_its_declared_size(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's zipfile already stops at the declared size; here a reader that trusts the data
    instead (as others do) is simulated, and the streaming count must stop it by itself."""
    archive = _zip(tmp_path / "src" / "hf_pec.zip", {"hf_pec/happy/train.txt": "tiny\n"})
    real_open = zipfile.ZipFile.open

    def open_more(self: zipfile.ZipFile, name: Any, *args: Any, **kwargs: Any) -> Any:
        real_open(self, name, *args, **kwargs).close()
        return io.BytesIO(bytes(3 << 20))  # 3 MiB where 5 bytes are declared

    monkeypatch.setattr(zipfile.ZipFile, "open", open_more)
    with pytest.raises(FormatError) as info:
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == (
        f"{archive}: member 'hf_pec/happy/train.txt' holds more than the 5 bytes the archive's "
        f"directory declares; {LIMITS}"
    )
    assert _tree(home / "extracted") == []


# ---------------------------------------------------------------------- 9. links, collisions
def test_symlink_member_used_as_a_folder_is_refused(tmp_path: Path, home: Path) -> None:
    archive = _zip(
        tmp_path / "src" / "hf_pec.zip",
        {"hf_pec/link": "/etc", "hf_pec/link/train.txt": "x\n"},
        links=("hf_pec/link",),
    )
    with pytest.raises(FormatError) as info:
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == f"{archive}: member 'hf_pec/link' is a symbolic link; {LIMITS}"
    assert _tree(home / "extracted") == []
    result = run("fetch", "pec", "--source", archive.parent, "--no-verify")
    assert (result.exit_code, result.output) == (2, f"error: {info.value}\n")


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (
            ["hf_pec/happy", "hf_pec/happy/train.txt"],
            "member 'hf_pec/happy/train.txt' would go inside 'hf_pec/happy', a file",
        ),
        (
            ["hf_pec/happy/train.txt", "hf_pec/happy"],
            "member 'hf_pec/happy' is a file where 'hf_pec/happy/' needs a folder",
        ),
        (
            ["hf_pec/happy/train.txt", "hf_pec/happy/train.txt"],
            "member 'hf_pec/happy/train.txt' appears twice",
        ),
        (
            ["hf_pec/happy/train.txt", "hf_pec/happy/TRAIN.txt"],
            "members 'hf_pec/happy/train.txt' and 'hf_pec/happy/TRAIN.txt' would be extracted to the same path",
        ),
        (
            ["hf_pec/happy/train.txt", "hf_pec/./happy/train.txt"],
            "members 'hf_pec/happy/train.txt' and 'hf_pec/./happy/train.txt' would be extracted to the same path",
        ),
        (
            ["hf_pec/x", "/etc/cron.d/x"],
            "member '/etc/cron.d/x' would be extracted outside the target folder",
        ),
        (
            ["hf_pec/x", "hf_pec\\..\\..\\x"],
            "member 'hf_pec\\\\..\\\\..\\\\x' would be extracted outside the target folder",
        ),
    ],
)
def test_colliding_or_escaping_members_are_refused(
    tmp_path: Path, home: Path, names: list[str], problem: str
) -> None:
    archive = tmp_path / "src" / "hf_pec.zip"
    archive.parent.mkdir()
    duplicate = pytest.warns(UserWarning, match="Duplicate name") if len(set(names)) == 1 else nullcontext()
    with zipfile.ZipFile(archive, "w") as zf, duplicate:
        for n in names:
            zf.writestr(zipfile.ZipInfo(n), "x\n")
    with pytest.raises(FormatError) as info:
        _fetcher(home, archive.parent, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == f"{archive}: {problem}; {LIMITS}"
    assert _tree(home / "extracted") == []


# ---------------------------------------------------------------------- 9. CONVBANK_HOME
def test_home_error_maps_os_errors_under_home_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ro = OSError(30, "Read-only file system", str(home / "locks"))
    assert str(home_error(ro, home)) == (
        f"CONVBANK_HOME {home} is not writable (Read-only file system: {home / 'locks'}); make it "
        "writable or point CONVBANK_HOME at a writable folder"
    )
    full = OSError(28, "No space left on device", str(home / "bank" / "x.parquet"))
    assert str(home_error(full, home)) == (
        f"CONVBANK_HOME {home}: no space left writing {home / 'bank' / 'x.parquet'}; free some space "
        "or point CONVBANK_HOME at a writable folder"
    )
    assert home_error(OSError(30, "Read-only file system", str(tmp_path / "elsewhere")), home) is None
    assert home_error(OSError(30, "Read-only file system"), home) is None


def test_fetcher_in_a_blocked_home_raises_setup_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, blocker = blocked_home(tmp_path, monkeypatch)
    src = _zip(tmp_path / "src" / "hf_pec.zip", {"hf_pec/happy/train.txt": "x\n"}).parent
    with pytest.raises(SetupError) as info:
        _fetcher(home, src, verify=False).fetch(PEC, [ARCHIVE])
    assert str(info.value) == (
        f"CONVBANK_HOME {home}: {blocker} is a file, not a folder; move it away or point "
        "CONVBANK_HOME at a writable folder"
    )
    assert info.value.exit_code == 5 and isinstance(info.value, convbank.ConvbankError)


# ---------------------------------------------------------------------- 9. a folder for a file
@pytest.mark.parametrize("where", ["{src}/casino_valid.json", "{src}/casino/casino_valid.json", "{cache}"])
def test_a_folder_where_a_source_file_belongs_is_named(tmp_path: Path, where: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    cache = tmp_path / "home" / "downloads" / "casino" / "casino_valid.json"
    folder = Path(where.format(src=src, cache=cache))
    folder.mkdir(parents=True)
    f = CASINO.file("casino_valid.json")
    message = (
        f"{folder}: is a folder, not the file casino_valid.json that casino needs; remove or rename the "
        f"folder, or put the publisher's file from {f.url} there"
    )
    with pytest.raises(SourceError) as info:
        Fetcher(sources=[src], root=tmp_path / "home").get(CASINO, f)
    assert str(info.value) == message
    result = run("raw", "casino", "--split", "valid", "--source", src)
    assert (result.exit_code, result.output) == (3, f"error: {message}\n")
    assert Fetcher(sources=[src], root=tmp_path / "home").find(CASINO, f) is None  # list/info: absent
