"""Fetching: a loopback HTTP server serves files; success, cache, 404, checksum mismatch,
interrupted transfer, offline, local sources, trust on first use, archives."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import http.server
import re
import socket
import subprocess
import sys
import threading
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
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
        elif self.path in _HOSTILE:
            _HOSTILE[self.path](self)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


def _answer(status: int, body: bytes = b"", **headers: str) -> Callable[[_Handler], None]:
    def send(handler: _Handler) -> None:
        handler.send_response(status)
        for key, value in {
            "Content-Length": str(len(body)),
            **{k.replace("_", "-"): v for k, v in headers.items()},
        }.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(body)

    return send


def _endless(handler: _Handler) -> None:  # no length, bytes for ever
    handler.send_response(200)
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True
    with contextlib.suppress(OSError):
        for _ in range(100_000):  # 6.4 GB at most
            handler.wfile.write(b"x" * 65536)


def _trickle(handler: _Handler) -> None:  # its length announced, then a byte every 0.1 s
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(BODY)))
    handler.end_headers()
    with contextlib.suppress(OSError):
        for byte in BODY[:100]:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.1)


def _gzip_trickle(
    handler: _Handler,
) -> None:  # a gzip body of empty blocks: 25 bytes a second, nothing decoded
    handler.send_response(200)
    handler.send_header("Content-Encoding", "gzip")
    handler.end_headers()
    with contextlib.suppress(OSError):
        handler.wfile.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        for _ in range(50):
            handler.wfile.write(b"\x00\x00\x00\xff\xff")  # a stored block of no bytes, not the last
            handler.wfile.flush()
            time.sleep(0.2)


def _slow_head(pieces: list[bytes], pause: float, body: bytes = BODY) -> Callable[[_Handler], None]:
    """An answer's head sent a piece every ``pause`` seconds, each within the read timeout,
    then ``body``; the connection closed."""

    def send(handler: _Handler) -> None:
        with contextlib.suppress(OSError):
            for piece in pieces:
                handler.wfile.write(piece)
                handler.wfile.flush()
                time.sleep(pause)
            handler.wfile.write(body)
        handler.close_connection = True

    return send


_CODED = b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nConnection: close\r\n\r\n"
_HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY)


def _chunked(handler: _Handler) -> None:  # no length: the body in chunks of 10,000 bytes
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for at in range(0, len(BODY), 10_000):
        piece = BODY[at : at + 10_000]
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
    handler.wfile.write(b"0\r\n\r\n")


def _raw(reply: bytes) -> Callable[[_Handler], None]:  # bytes that are no HTTP answer, then close
    def send(handler: _Handler) -> None:
        handler.wfile.write(reply)
        handler.close_connection = True

    return send


_BOMB = zlib.compressobj(9, zlib.DEFLATED, 31)
GZIP_BOMB = b"".join(_BOMB.compress(bytes(1 << 20)) for _ in range(256)) + _BOMB.flush()  # 256 MiB of zeros
_HOSTILE: dict[str, Callable[[_Handler], None]] = {
    "/html/casino_valid.json": _answer(
        200, b"<html><h1>Service unavailable</h1></html>", Content_Type="text/html"
    ),
    "/empty-302/casino_valid.json": _answer(302),
    "/partial/casino_valid.json": _answer(206, BODY),
    "/loop/casino_valid.json": _answer(302, Location="/loop/casino_valid.json"),
    "/to-file/casino_valid.json": _answer(302, Location="file:///etc/passwd"),
    "/to-ftp/casino_valid.json": _answer(301, Location="ftp://127.0.0.1/casino_valid.json"),
    "/moved/casino_valid.json": _answer(307, Location="/casino_valid.json"),
    "/announces-less/casino_valid.json": _answer(200, BODY[:1000], Content_Length="1000"),
    "/announces-more/casino_valid.json": _answer(200, BODY, Content_Length=str(8 << 30)),
    "/endless/casino_valid.json": _endless,
    "/trickle/casino_valid.json": _trickle,
    "/gzip-trickle/casino_valid.json": _gzip_trickle,
    "/chunked/casino_valid.json": _chunked,
    "/gzip-cut/casino_valid.json": _slow_head([_CODED % b"gzip"], 0, gzip.compress(BODY)[:-9]),
    "/deflate-cut/casino_valid.json": _slow_head([_CODED % b"deflate"], 0, zlib.compress(BODY)[:-9]),
    "/brotli/casino_valid.json": _answer(200, b"\x8b\x00\x80ab\x03", Content_Encoding="br"),
    "/gzip-padded/casino_valid.json": _answer(
        200, gzip.compress(BODY) + bytes(1000), Content_Encoding="gzip"
    ),
    "/gzip-members/casino_valid.json": _answer(
        200, gzip.compress(BODY[:1000]) + bytes(9) + gzip.compress(BODY[1000:]), Content_Encoding="gzip"
    ),
    "/length-superscript/casino_valid.json": _answer(200, BODY, Content_Length="\u00b2"),
    "/length-digits/casino_valid.json": _answer(200, BODY, Content_Length="9" * 5000),
    "/head-continues/casino_valid.json": _slow_head([b"HTTP/1.1 100 Continue\r\n\r\n"] * 100, 0.5),
    "/head-bytes/casino_valid.json": _slow_head([bytes([b]) for b in _HEAD], 0.2),
    "/head-lines/casino_valid.json": _slow_head(
        [b"HTTP/1.1 200 OK\r\n", *(b"X-%d: y\r\n" % i for i in range(98)), _HEAD[17:]], 0.5
    ),
    "/to-bad-ipv6/casino_valid.json": _answer(302, Location="http://[zz/casino_valid.json"),
    "/to-long-host/casino_valid.json": _answer(302, Location=f"http://{'a' * 300}.org/casino_valid.json"),
    "/closes/casino_valid.json": _raw(b""),
    "/ssh/casino_valid.json": _raw(b"SSH-2.0-OpenSSH_9.6\r\n"),
    "/headers/casino_valid.json": _raw(b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200 + b"\r\n"),
    "/gzip-bomb/casino_valid.json": _answer(200, GZIP_BOMB, Content_Encoding="gzip"),
    "/gzip/casino_valid.json": _answer(200, gzip.compress(BODY), Content_Encoding="gzip"),
}


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


def test_several_files_not_fetched_say_why_each(server: str, tmp_path: Path) -> None:
    """Files that could not be fetched are each named with why (before: only their names,
    `2 files could not be fetched: a.json, b.json`, 2 of 2 runs)."""
    files = [
        SourceFile(
            name="casino_valid.json", url=f"{server}/missing/casino_valid.json", sha256=SHA, size=len(BODY)
        ),
        SourceFile(
            name="casino_test.json", url="http://127.0.0.1:9/casino_test.json", sha256=SHA, size=len(BODY)
        ),
    ]
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).fetch(CASINO, files)
    assert str(info.value).startswith(
        "casino: 2 files could not be fetched: casino_valid.json (HTTP 404), casino_test.json "
        "(cannot connect to 127.0.0.1"
    )


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
    (tmp_path / f.name).write_bytes(BODY[:-1] + b" ")
    with pytest.raises(ChecksumError) as info:
        Fetcher(sources=[tmp_path]).get(CASINO, f)
    actual = hashlib.sha256(BODY[:-1] + b" ").hexdigest()
    assert str(info.value) == (
        f"{tmp_path / f.name}: sha256 {actual} does not match the expected {f.sha256} (local source); "
        f"replace it with the publisher's file from {f.url}, or pass --no-verify"
    )
    (tmp_path / f.name).write_bytes(BODY + b" ")  # another size: refused unread
    with pytest.raises(ChecksumError) as info:
        Fetcher(sources=[tmp_path]).get(CASINO, f)
    assert str(info.value) == (
        f"{tmp_path / f.name}: 112,117 bytes, not the 112,116 of the publisher's file (sha256 {f.sha256}) "
        f"(local source); replace it with the publisher's file from {f.url}, or pass --no-verify"
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


_HOSTILE_REFUSED = {
    "html": "the server announces 41 bytes, but the file is 112,116 bytes",
    "announces-less": "the server announces 1,000 bytes, but the file is 112,116 bytes",
    "announces-more": "the server announces 8,589,934,592 bytes, but the file is 112,116 bytes",
    "endless": "the server sent more than the file's 112,116 bytes",
    "gzip-bomb": "the server sent more than the file's 112,116 bytes",
    "loop": "more than 10 redirects (the last to {server}/loop/casino_valid.json)",
    "to-file": "{server}/to-file/casino_valid.json redirects to 'file:///etc/passwd', which is not an http(s) URL",
    "to-ftp": "{server}/to-ftp/casino_valid.json redirects to 'ftp://127.0.0.1/casino_valid.json', which is not "
    "an http(s) URL",
}


@pytest.mark.parametrize("sha", [SHA, None], ids=["published", "trust-on-first-use"])
@pytest.mark.parametrize("case", sorted(_HOSTILE_REFUSED))
def test_a_hostile_server_gives_one_line_and_keeps_nothing(
    server: str, tmp_path: Path, case: str, sha: str | None
) -> None:
    """Only a 200 answer of the file's declared size, reached through http(s) redirects, is the
    file; anything else is one line naming why, nothing kept and no checksum recorded (before:
    an endless body or a gzip bomb was written until the disk filled, 908 MB in 15 s for a file
    of 112,116 bytes; with no published sha256 an HTML page was recorded as the file; a redirect
    to file:// or ftp:// blamed CONVBANK_HOME; 2 of 2 runs each)."""
    url = f"{server}/{case}/casino_valid.json"
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url, sha))
    cache = tmp_path / "home" / "downloads" / "casino"
    assert str(info.value) == (
        f"{url}: download failed ({_HOSTILE_REFUSED[case].format(server=server)}); nothing was kept — "
        f"retry, or put casino_valid.json in {cache} or in a --source folder"
    )
    assert list(cache.iterdir()) == []
    assert not (tmp_path / "home" / "checksums.json").exists()


@pytest.mark.parametrize("case", ["empty-302", "partial"])
def test_an_answer_other_than_200_is_its_status(server: str, tmp_path: Path, case: str) -> None:
    """A 302 with no Location or a 206 is not the file (before: kept as it, 0 or 112,116 bytes,
    its checksum recorded with no published sha256)."""
    url = f"{server}/{case}/casino_valid.json"
    with pytest.raises(
        DownloadError, match=r"^" + re.escape(f"{url}: HTTP {206 if case == 'partial' else 302}; ")
    ):
        _fetcher(tmp_path).get(CASINO, _file(url, None))
    assert not (tmp_path / "home" / "checksums.json").exists()


@pytest.mark.parametrize("case", ["moved", "gzip", "gzip-padded", "gzip-members"])
def test_a_redirect_or_a_gzip_encoding_gives_the_file(server: str, tmp_path: Path, case: str) -> None:
    path = _fetcher(tmp_path).get(CASINO, _file(f"{server}/{case}/casino_valid.json"))
    assert path.read_bytes() == BODY


@pytest.mark.parametrize("case", ["length-superscript", "length-digits"])
def test_a_content_length_that_is_no_length_is_none(server: str, tmp_path: Path, case: str) -> None:
    """A `Content-Length` of `²` or of 5,000 digits is no length, as urllib3 reads the body
    (to its end, checked against the file's size) (before: Python's `ValueError: invalid
    literal for int()` or its 4,300-digit limit escaped the download, 2 of 2 runs)."""
    assert _fetcher(tmp_path).get(CASINO, _file(f"{server}/{case}/casino_valid.json")).read_bytes() == BODY


def test_a_transfer_that_stalls_says_so(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that stops sending half way is a stall, not a connection never made (before:
    `cannot connect to 127.0.0.1 ... or retry when online`)."""
    monkeypatch.setattr("convbank.fetch.TIMEOUT", (5.0, 1.0))
    url = f"{server}/slow/casino_valid.json"
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url))
    assert str(info.value).startswith(f"{url}: download failed (the server sent nothing for 1 s")


@pytest.mark.parametrize("case", ["trickle", "gzip-trickle"])
def test_a_server_that_trickles_is_stopped(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """A server sending a byte every 0.1 s, never idle for a whole read timeout, or a gzip body
    of empty blocks that decodes to nothing (inside one read that never returns), is stopped
    once it averages fewer than 1,024 bytes a second over a read timeout's span (before: read
    on for ever, 120 s allowed for each byte; 2 of 2 runs still reading when killed)."""
    monkeypatch.setattr("convbank.fetch.TIMEOUT", (5.0, 1.0))
    url = f"{server}/{case}/casino_valid.json"
    began = time.monotonic()
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url))
    assert time.monotonic() - began < 3
    assert re.fullmatch(
        re.escape(f"{url}: download failed (the server sent ")
        + r"\d+ bytes in 1 s, fewer than 1,024 a second\); nothing was kept .*",
        str(info.value),
    )
    assert list((tmp_path / "home" / "downloads" / "casino").iterdir()) == []


@pytest.mark.parametrize("case", ["head-bytes", "head-lines", "head-continues"])
def test_a_server_that_trickles_its_headers_is_stopped(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """An answer's status line and headers must be whole within the read timeout, not each read
    of them: a byte every 0.2 s, or 100 headers each 0.5 s apart, with a read timeout of 1 s, is
    the timeout, as is an endless run of `100 Continue` answers each 0.5 s apart (before: read for
    19.7 s and 79.9 s, each read within the timeout, 2 of 2 runs; the 100s for ever, still read
    when killed at 30 s)."""
    monkeypatch.setattr("convbank.fetch.TIMEOUT", (5.0, 1.0))
    url = f"{server}/{case}/casino_valid.json"
    began = time.monotonic()
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url))
    assert time.monotonic() - began < 2.5
    cache = tmp_path / "home" / "downloads" / "casino"
    assert str(info.value) == (
        f"{url}: download failed ({url} sent no answer within 1 s); nothing was kept — retry, "
        f"or put casino_valid.json in {cache} or in a --source folder"
    )
    assert list(cache.iterdir()) == []


def _unsized_refused(server: str, tmp_path: Path, case: str) -> tuple[str, str, Path]:
    """``casino_valid.json`` fetched as a file of no published size from the server's ``case``:
    refused, with nothing kept in the cache and no checksum recorded; the refusal's message,
    the URL and the cache folder."""
    url = f"{server}/{case}/casino_valid.json"
    unsized = SourceFile(name="casino_valid.json", url=url, sha256=None)
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, unsized)
    cache = tmp_path / "home" / "downloads" / "casino"
    assert list(cache.iterdir()) == []
    assert not (tmp_path / "home" / "checksums.json").exists()
    return str(info.value), url, cache


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("gzip-cut", "the gzip body ends before its stream does, after 112,116 decoded bytes"),
        ("deflate-cut", "the deflate body ends before its stream does, after 112,088 decoded bytes"),
        ("brotli", "the body is in the 'br' coding, not one asked for (gzip, deflate)"),
    ],
)
def test_a_compressed_body_cut_short_is_refused(server: str, tmp_path: Path, case: str, why: str) -> None:
    """A body whose transfer ended but whose gzip or deflate stream did not (or in a coding
    not asked for) is refused, nothing kept and no checksum recorded for a file of no published
    size (before: the bytes decoded before the cut were kept as the file and their sha256
    recorded as its checksum, 3 of 3 cuts; a `br` body was kept undecoded)."""
    said, url, cache = _unsized_refused(server, tmp_path, case)
    assert said == (
        f"{url}: download failed ({why}); nothing was kept — retry, or put casino_valid.json in "
        f"{cache} or in a --source folder"
    )


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("endless", "the server sent more than 65,536 bytes"),
        ("announces-more", "the server announces 8,589,934,592 bytes, more than 65,536"),
        ("chunked", "the server sent more than 65,536 bytes"),
    ],
)
def test_a_file_of_no_published_size_is_bounded(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, why: str
) -> None:
    """A file with no published size (ConvAI2's data_tolokers.json) is read no further than
    CONVBANK_DOWNLOAD_MAX_BYTES (default 1 GiB), nothing kept and no checksum recorded
    (before: an endless body was written until the disk filled, 3.5 GB in 6 s, 2 of 2 runs)."""
    monkeypatch.setenv("CONVBANK_DOWNLOAD_MAX_BYTES", "64K")
    said, url, cache = _unsized_refused(server, tmp_path, case)
    assert said == (
        f"{url}: download failed ({why}, the most taken for a file of no published size "
        "(CONVBANK_DOWNLOAD_MAX_BYTES raises it)); nothing was kept — retry, or put "
        f"casino_valid.json in {cache} or in a --source folder"
    )
    monkeypatch.setenv("CONVBANK_DOWNLOAD_MAX_BYTES", "1M")  # the file, sent in chunks of no length
    chunked = SourceFile(name="casino_valid.json", url=f"{server}/chunked/casino_valid.json", sha256=None)
    assert _fetcher(tmp_path).get(CASINO, chunked).read_bytes() == BODY


_NOT_HTTP = {
    "closes": "RemoteDisconnected: Remote end closed connection without response",
    "ssh": "BadStatusLine: SSH-2.0-OpenSSH_9.6",
    "headers": "HTTPException: got more than 100 headers",
}


@pytest.mark.parametrize("case", sorted(_NOT_HTTP))
def test_a_server_that_answers_no_http_is_not_unreachable(server: str, tmp_path: Path, case: str) -> None:
    """A server that takes the connection and closes it, or sends something other than an HTTP
    answer, is named as such (before: `cannot connect to 127.0.0.1 ... or retry when online`,
    4 of 4 such servers, 2 of 2 runs each)."""
    url = f"{server}/{case}/casino_valid.json"
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url))
    assert str(info.value) == (
        f"{url}: download failed (127.0.0.1 sent no valid HTTP answer ({_NOT_HTTP[case]})); nothing "
        f"was kept — retry, or put casino_valid.json in {tmp_path / 'home' / 'downloads' / 'casino'} "
        "or in a --source folder"
    )


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("to-bad-ipv6", "ValueError: Invalid IPv6 URL"),
        ("to-long-host", "LocationParseError: Failed to parse: "),
    ],
)
def test_a_redirect_to_a_url_that_cannot_be_parsed_is_one_line(
    server: str, tmp_path: Path, case: str, why: str
) -> None:
    """Before: Python's `ValueError: Invalid IPv6 URL` or urllib3's `LocationParseError`
    escaped `fetch` as a traceback, exit 1 (2 of 2 runs each)."""
    url = f"{server}/{case}/casino_valid.json"
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, _file(url))
    said = str(info.value)
    assert said.startswith(f"{url}: download failed (") and why in said, said
    assert said.endswith(
        f"); nothing was kept — retry, or put casino_valid.json in {tmp_path / 'home' / 'downloads' / 'casino'} "
        "or in a --source folder"
    )


@pytest.mark.parametrize(
    ("path", "sha", "said"),
    [
        ("/missing/casino_valid.json", SHA, "{url}: HTTP 404; could not download casino_valid.json"),
        ("/casino_valid.json", "0" * 64, "{url}: the downloaded file's sha256 does not match the expected 0"),
        ("/short/casino_valid.json", SHA, "{url}: download failed (the transfer broke after 1,000 bytes"),
    ],
)
def test_a_url_with_a_user_and_password_never_says_them(
    server: str, tmp_path: Path, path: str, sha: str, said: str
) -> None:
    """A source URL carrying ``user:password@`` is fetched with them and said without them,
    as a proxy's are (before: every message of a download that failed printed the password,
    `http://alice:s3cret@127.0.0.1:PORT/...: HTTP 404`, 3 of 3 failures, 2 of 2 runs)."""
    secret = server.replace("http://", "http://alice:s3cret@")
    with pytest.raises((DownloadError, ChecksumError)) as info:
        _fetcher(tmp_path).get(CASINO, _file(f"{secret}{path}", sha))
    assert str(info.value).startswith(said.format(url=f"{server}{path}")), str(info.value)
    assert "s3cret" not in str(info.value) and "alice" not in str(info.value)


def _head(conn: socket.socket) -> bytes | None:
    """A request's head read from ``conn``, or None where the client closed it first."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return None
        data += got
    return data


def test_a_kept_alive_connection_the_server_closed_is_sent_again_on_a_new_one(tmp_path: Path) -> None:
    """The server answers a redirect keeping its connection open (HTTP/1.1, no ``Connection:
    close``), then closes it when the redirect's request arrives on it, unanswered, as a server
    whose keep-alive time ran out does: the request goes once more, on a new connection, and
    the file comes (before: `127.0.0.1 sent no valid HTTP answer (RemoteDisconnected: ...)`, 2
    of 2 runs; found by pass 22)."""
    listener = socket.create_server(("127.0.0.1", 0))
    requests_on: list[int] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            _head(conn)
            requests_on.append(1)
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /casino_valid.json\r\nContent-Length: 0\r\n\r\n")
            if _head(conn) is not None:
                requests_on.append(1)  # the redirect's request, on the same connection: unanswered
        conn, _ = listener.accept()
        with conn:
            _head(conn)
            requests_on.append(2)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with listener:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/r/casino_valid.json"
        path = _fetcher(tmp_path).get(CASINO, _file(url))
        thread.join(10)
    assert path.read_bytes() == BODY and requests_on == [1, 1, 2]
