"""A download's time bounds hold for the whole attempt: a chain of redirects shares the read
timeout for its answers' heads, and a proxy's answer to ``CONNECT`` is held to the connect
timeout, each against a loopback server that trickles them."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from convbank import catalog
from convbank.datasets import SourceFile
from convbank.errors import DownloadError
from convbank.fetch import Fetcher

CASINO = catalog.get("casino")


def _head(conn: socket.socket) -> bytes:
    """The request's head as the client sent it."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(4096)
        if not piece:
            break
        data += piece
    return data


def _trickle(conn: socket.socket, data: bytes, pause: float) -> None:
    """``data`` sent 8 bytes every ``pause`` seconds, until the client shuts its socket."""
    with contextlib.suppress(OSError):
        for at in range(0, len(data), 8):
            conn.sendall(data[at : at + 8])
            time.sleep(pause)


@contextlib.contextmanager
def _serving(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback server answering each connection with ``answer`` in a thread; its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = listener.accept()
                threading.Thread(target=_answered, args=(answer, conn), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def _answered(answer: Callable[[socket.socket], None], conn: socket.socket) -> None:
    with conn:
        answer(conn)


def _redirects(conn: socket.socket) -> None:
    """``/N`` redirects to ``/N+1`` (a head of 96 bytes in 0.3 s), ``/10`` is the file."""
    hop = int(_head(conn).split(b" ")[1].strip(b"/"))
    if hop < 10:
        head = b"HTTP/1.1 302 Found\r\nLocation: /%d\r\nContent-Length: 0\r\nConnection: close\r\n" % (
            hop + 1
        )
        _trickle(conn, head + b"X-Pad: " + b"a" * 20 + b"\r\n\r\n", 0.025)
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def _fetcher(tmp_path: Path) -> Fetcher:
    return Fetcher(root=tmp_path / "home", offline=False, progress=False)


def test_a_chain_of_redirects_shares_the_read_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten redirects, each head trickled within the read timeout (0.3 s of 1 s), are held to
    the read timeout in all (before: 3.3 s, each head allowed its own 1 s, 2 of 2 runs)."""
    monkeypatch.setattr("convbank.fetch.TIMEOUT", (5.0, 1.0))
    with _serving(_redirects) as port:
        url = f"http://127.0.0.1:{port}/0"
        began = time.monotonic()
        with pytest.raises(DownloadError) as info:
            _fetcher(tmp_path).get(CASINO, SourceFile(name="casino_valid.json", url=url, sha256=None))
        took = time.monotonic() - began
    cache = tmp_path / "home" / "downloads" / "casino"
    assert 0.9 < took < 1.6, took
    said = re.fullmatch(
        rf"{re.escape(url)}: download failed \(http://127\.0\.0\.1:{port}/(\d) sent no answer within 1 s \(in all, "
        r"with the (\d) redirects before it\)\); nothing was kept — retry, or put casino_valid\.json in "
        rf"{re.escape(str(cache))} or in a --source folder",
        str(info.value),
    )
    assert said is not None, str(info.value)
    assert said[1] == said[2]  # the hop where the time ran out, 3 by the clock
    assert list(cache.iterdir()) == []


def _proxy(conn: socket.socket) -> None:
    """A proxy answering ``CONNECT`` with a head of 540 bytes trickled over 3.4 s."""
    _head(conn)
    _trickle(conn, b"HTTP/1.1 200 Connection established\r\n" + b"X-A: b\r\n" * 63 + b"\r\n", 0.05)


def test_a_proxy_trickling_its_connect_answer_is_held_to_the_connect_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An https URL through an http proxy whose answer to ``CONNECT`` comes 8 bytes at a time,
    each within the connect timeout, is held to the connect timeout in all (before: read for
    7.8 s with a timeout of 1 s, as long as the proxy went on, 2 of 2 runs)."""
    monkeypatch.setattr("convbank.fetch.TIMEOUT", (1.0, 5.0))
    for name in ("NO_PROXY", "no_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with _serving(_proxy) as port:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
        url = "https://example.invalid/casino_valid.json"
        began = time.monotonic()
        with pytest.raises(DownloadError) as info:
            _fetcher(tmp_path).get(CASINO, SourceFile(name="casino_valid.json", url=url, sha256=None))
        took = time.monotonic() - began
    cache = tmp_path / "home" / "downloads" / "casino"
    assert took < 1.6, took
    assert str(info.value) == (
        f"{url}: cannot connect to example.invalid through the proxy 127.0.0.1:{port} within 1 s; put "
        f"casino_valid.json in {cache} or in a --source folder, or retry when online"
    )
    assert list(cache.iterdir()) == []


def test_a_proxy_that_cannot_be_reached_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A download through a proxy that refuses connections names the proxy, its credentials
    left out (before: `cannot connect to example.invalid`, the server, which may well be up,
    2 of 2 runs)."""
    for name in ("NO_PROXY", "no_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://me:secret@127.0.0.1:{port}")
    url = "https://example.invalid/casino_valid.json"
    with pytest.raises(DownloadError) as info:
        _fetcher(tmp_path).get(CASINO, SourceFile(name="casino_valid.json", url=url, sha256=None))
    cache = tmp_path / "home" / "downloads" / "casino"
    assert str(info.value) == (
        f"{url}: cannot connect to example.invalid through the proxy 127.0.0.1:{port}; put casino_valid.json "
        f"in {cache} or in a --source folder, or retry when online"
    )


def test_a_tcp_connect_takes_no_more_than_the_connect_time_left() -> None:
    """A connection whose TCP connect hangs (a loopback listener whose backlog is full drops
    the SYNs) when 0.3 s of the shared connect timeout are left takes 0.3 s, its own timeout
    being 3 s (before: 3.0 s, the clock unable to shut a socket not yet made, 2 of 2 runs)."""
    import urllib3

    from convbank._headerclock import ConnectTooSlowError, shared_bounds, within_timeout

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        filling = [socket.socket() for _ in range(3)]
        for sock in filling:
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
        connection = urllib3.connection.HTTPConnection("127.0.0.1", port, timeout=3)
        began = time.monotonic()
        with shared_bounds(0.3, 5.0), pytest.raises(ConnectTooSlowError, match=r"within 0\.3 s"):
            within_timeout(connection, connection.connect, "connect")
        took = time.monotonic() - began
        for sock in filling:
            sock.close()
    assert 0.25 < took < 0.8, took
    assert connection.timeout == 3
