"""Fetching: a loopback HTTP server serves files; success, cache, 404, checksum mismatch,
interrupted transfer, offline, local sources, trust on first use, archives."""

from __future__ import annotations

import hashlib
import http.server
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from convbank import catalog
from convbank.datasets import SourceFile
from convbank.errors import ChecksumError, DownloadError, FormatError, OfflineError
from convbank.fetch import Fetcher, checksum_status
from testsupport import SHARED

BODY = (SHARED / "casino" / "casino_valid.json").read_bytes()
SHA = hashlib.sha256(BODY).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Handler.hits.append(self.path)
        if self.path == "/casino_valid.json":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        elif self.path == "/slow/casino_valid.json":  # half now, the rest never (a client killed)
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[: len(BODY) // 2])
            self.wfile.flush()
            time.sleep(30)
        elif self.path == "/short/casino_valid.json":  # promises more than it sends
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:1000])
            self.wfile.flush()
            self.close_connection = True
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _file(url: str, sha: str | None = SHA) -> SourceFile:
    return SourceFile(name="casino_valid.json", url=url, sha256=sha, size=len(BODY))


def _fetcher(tmp_path: Path, **kw: object) -> Fetcher:
    return Fetcher(root=tmp_path / "home", offline=False, progress=False, **kw)  # type: ignore[arg-type]


CASINO = catalog.get("casino")


def test_download_verifies_and_caches(server: str, tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    _Handler.hits.clear()
    path = fetcher.get(CASINO, _file(f"{server}/casino_valid.json"))
    assert path == tmp_path / "home" / "downloads" / "casino" / "casino_valid.json"
    assert path.read_bytes() == BODY
    assert fetcher.get(CASINO, _file(f"{server}/casino_valid.json")) == path
    assert _Handler.hits == ["/casino_valid.json"]  # the second call used the cache
    assert sorted(p.name for p in path.parent.iterdir()) == ["casino_valid.json"]  # locks live in locks/


def test_http_404(server: str, tmp_path: Path) -> None:
    url = f"{server}/missing/casino_valid.json"
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url))
    cache = tmp_path / "home" / "downloads" / "casino"
    assert str(info.value) == (
        f"{url}: HTTP 404; could not download casino_valid.json for casino — put the file in "
        f"{cache} or in a --source folder"
    )
    assert not (cache / "casino_valid.json").exists()


def test_checksum_mismatch_keeps_nothing(server: str, tmp_path: Path) -> None:
    url = f"{server}/casino_valid.json"
    with pytest.raises(
        ChecksumError, match=r"the downloaded file's sha256 does not match the expected 0{64}"
    ):
        _fetcher(tmp_path).get(CASINO, _file(url, "0" * 64))
    leftovers = [
        p.name for p in (tmp_path / "home" / "downloads" / "casino").iterdir() if not p.name.endswith(".lock")
    ]
    assert leftovers == []


def test_interrupted_transfer_keeps_nothing(server: str, tmp_path: Path) -> None:
    url = f"{server}/short/casino_valid.json"
    with pytest.raises(DownloadError, match=r"download failed .*nothing was kept"):
        _fetcher(tmp_path).get(CASINO, _file(url))
    leftovers = [
        p.name for p in (tmp_path / "home" / "downloads" / "casino").iterdir() if not p.name.endswith(".lock")
    ]
    assert leftovers == []


def test_a_download_killed_leaves_nothing_after_the_next(server: str, tmp_path: Path) -> None:
    """A fetch killed (``kill -9``) half way through a download leaves its temporary file in
    a folder named for its process (``.casino_valid.json.<pid>.<random>.tmp``), which the
    next download into the cache removes (before: pooch's ``downloads/casino/tmpbuj865kx``,
    half the file, stayed for good: neither the next fetch nor ``doctor --clean`` removed
    it; 2 of 2 kills)."""
    cache = tmp_path / "home" / "downloads" / "casino"
    script = (
        "from pathlib import Path; from convbank import catalog; from convbank.datasets import SourceFile; "
        "from convbank.fetch import Fetcher; "
        f"Fetcher(root=Path({str(tmp_path / 'home')!r}), offline=False, progress=False).get("
        f"catalog.get('casino'), SourceFile(name='casino_valid.json', url={server + '/slow/casino_valid.json'!r}, "
        f"sha256={SHA!r}, size={len(BODY)}))"
    )
    fetch = subprocess.Popen([sys.executable, "-c", script])
    try:
        for _ in range(300):  # the download begun, its first half sent
            if any(f.is_file() for f in cache.rglob("*")):
                time.sleep(0.5)
                break
            time.sleep(0.05)
        else:
            pytest.fail("the download never began")
    finally:
        fetch.kill()
        fetch.wait()
    path = _fetcher(tmp_path).get(CASINO, _file(f"{server}/casino_valid.json"))
    assert path.read_bytes() == BODY
    assert sorted(p.name for p in cache.iterdir()) == ["casino_valid.json"]


def test_connection_refused(tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match=r"cannot connect to 127.0.0.1; put casino_valid.json in"):
        _fetcher(tmp_path).get(CASINO, _file("http://127.0.0.1:9/casino_valid.json"))


def test_trust_on_first_use(server: str, tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    f = _file(f"{server}/casino_valid.json", sha=None)
    assert checksum_status(f, fetcher.root) == "unverified"
    fetcher.get(CASINO, f)
    assert checksum_status(f, fetcher.root) == "recorded"
    # a local copy that differs from the recorded checksum is refused
    local = tmp_path / "src"
    local.mkdir()
    (local / "casino_valid.json").write_bytes(BODY.replace(b"Hello", b"Howdy", 1))
    with pytest.raises(ChecksumError, match=r"does not match the expected " + SHA):
        Fetcher(sources=[local], root=fetcher.root, progress=False).get(CASINO, f)


def test_offline_message(tmp_path: Path) -> None:
    f = CASINO.file("casino_test.json")
    fetcher = Fetcher(root=tmp_path / "home", offline=True)
    with pytest.raises(OfflineError) as info:
        fetcher.get(CASINO, f)
    assert str(info.value) == (
        "casino: casino_test.json is not available offline (CONVBANK_OFFLINE is set); download it "
        f"from {f.url} and put it in {tmp_path / 'home' / 'downloads' / 'casino'} or in a folder "
        "given with --source"
    )


def test_local_sources_direct_subfolder_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = CASINO.file("casino_valid.json")
    direct = tmp_path / "direct"
    direct.mkdir()
    (direct / f.name).write_bytes(BODY)
    assert Fetcher(sources=[direct]).get(CASINO, f) == direct / f.name
    assert Fetcher(sources=[SHARED]).get(CASINO, f) == SHARED / "casino" / f.name
    monkeypatch.setenv("CONVBANK_SOURCE", f"{tmp_path / 'nothing'}:{SHARED}")
    assert Fetcher().get(CASINO, f) == SHARED / "casino" / f.name


def test_local_checksum_mismatch_and_no_verify(tmp_path: Path) -> None:
    f = CASINO.file("casino_valid.json")
    (tmp_path / f.name).write_bytes(BODY + b" ")
    with pytest.raises(ChecksumError) as info:
        Fetcher(sources=[tmp_path]).get(CASINO, f)
    actual = hashlib.sha256(BODY + b" ").hexdigest()
    assert str(info.value) == (
        f"{tmp_path / f.name}: sha256 {actual} does not match the expected {f.sha256} (local source); "
        f"replace it with the publisher's file from {f.url}, or pass --no-verify"
    )
    assert Fetcher(sources=[tmp_path], verify=False).get(CASINO, f) == tmp_path / f.name


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def test_zip_path_traversal_is_refused(tmp_path: Path) -> None:
    pec = catalog.get("pec")
    f = pec.file("hf_pec.zip")
    archive = _zip(tmp_path / "hf_pec.zip", {"hf_pec/happy/train.txt": "", "../../evil.txt": "x"})
    with pytest.raises(FormatError) as info:
        Fetcher(root=tmp_path / "home").extract(pec, f, archive)
    assert str(info.value) == (
        f"{archive}: member '../../evil.txt' would be extracted outside the target folder; "
        "refusing to extract this archive — re-fetch the file"
    )
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "home" / "evil.txt").exists()


def test_zip_without_layout_and_bad_zip(tmp_path: Path) -> None:
    pec = catalog.get("pec")
    f = pec.file("hf_pec.zip")
    archive = _zip(tmp_path / "hf_pec.zip", {"other/happy/train.txt": ""})
    with pytest.raises(FormatError, match=r"no folder hf_pec/ inside; expected the publisher's layout"):
        Fetcher(root=tmp_path / "home").extract(pec, f, archive)
    bad = tmp_path / "bad" / "hf_pec.zip"
    bad.parent.mkdir()
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(FormatError, match=r"not a valid zip archive"):
        Fetcher(root=tmp_path / "home").extract(pec, f, bad)
    assert not any((tmp_path / "home" / "extracted" / "pec").glob("*/hf_pec"))
