"""One HTTP(S) download, bounded and hashed while it is written.

:func:`download` writes the body of a URL to a new file and returns its sha256. What it takes
is the publisher's file and nothing else:

- only a ``200`` answer is a file: any other status (a ``302`` without a ``Location``, a
  ``206``, a ``404``) is :class:`HTTPStatusError`;
- redirects are followed one by one, at most :data:`MAX_REDIRECTS`, and only to ``http`` or
  ``https`` URLs (a ``file://`` or ``ftp://`` target is refused, never opened);
- with the file's size declared, the transfer stops as soon as it outgrows it (an endless
  body, a ``Content-Encoding: gzip`` bomb), and a body of any other size is refused;
- a transfer that stalls or breaks says after how many bytes.

Each failure is :class:`UnreachableError` (no connection was made) or :class:`TransferError`, whose message
says what happened in one line; the caller names the file and where to put it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urljoin, urlsplit

from convbank._archive import first_line
from convbank._lazy import lazy

if TYPE_CHECKING:
    import requests
else:
    requests = lazy("requests")

__all__ = ["MAX_REDIRECTS", "HTTPStatusError", "Progress", "TransferError", "UnreachableError", "download"]

MAX_REDIRECTS = 10
"""Redirects followed before a download is refused."""

_CHUNK = 1 << 16


class TransferError(Exception):
    """A download that did not give the file: its message says why, in one line."""


class UnreachableError(TransferError):
    """No connection could be made to the server of the URL (or of a redirect's target)."""


class HTTPStatusError(TransferError):
    """The server answered with a status other than ``200``."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class Progress(Protocol):
    """A progress bar: its total, advanced by each chunk, closed at the end."""

    total: int | None

    def update(self, n: int) -> None: ...  # pragma: no cover - a protocol

    def close(self) -> None: ...  # pragma: no cover - a protocol


def _answer(session: requests.Session, url: str, timeout: tuple[float, float]) -> requests.Response:
    """The streamed ``200`` answer for ``url``, following at most :data:`MAX_REDIRECTS`
    redirects to ``http(s)`` URLs."""
    came_from = None
    for _ in range(MAX_REDIRECTS + 1):
        host = urlsplit(url).hostname
        if urlsplit(url).scheme.lower() not in ("http", "https") or not host:
            where = f"{came_from} redirects to {url!r}, which" if came_from else f"{url!r}"
            raise TransferError(f"{where} is not an http(s) URL")
        try:
            response = session.get(url, stream=True, timeout=timeout, allow_redirects=False)
        except requests.ReadTimeout as exc:
            raise TransferError(f"{url} sent no answer within {timeout[1]:g} s") from exc
        except requests.ConnectionError as exc:  # ConnectTimeout included
            raise UnreachableError(f"cannot connect to {host}") from exc
        except requests.RequestException as exc:
            raise TransferError(f"{url}: {type(exc).__name__}: {first_line(exc)}") from exc
        if not response.is_redirect:
            if response.status_code != 200:
                response.close()
                raise HTTPStatusError(response.status_code)
            return response
        came_from, url = url, urljoin(url, response.headers["Location"])
        response.close()
    raise TransferError(f"more than {MAX_REDIRECTS} redirects (the last to {url})")


def download(
    url: str,
    out: Path,
    *,
    size: int | None,
    timeout: tuple[float, float],
    progress: Progress | None = None,
) -> str:
    """Write the body of ``url`` to the new file ``out`` and return its sha256; with ``size``
    declared, refuse a body of any other size before writing a byte more than it."""
    import hashlib  # here: the catalog's commands import this module, and no hashing

    digest = hashlib.sha256()
    got = 0
    try:
        with requests.Session() as session, _answer(session, url, timeout) as response:
            announced = response.headers.get("Content-Length", "")
            coding = response.headers.get("Content-Encoding", "identity").strip().lower()
            encoded = coding not in ("", "identity")
            if size is not None and announced.isdigit() and not encoded and int(announced) != size:
                raise TransferError(
                    f"the server announces {int(announced):,} bytes, but the file is {size:,} bytes"
                )
            if progress is not None:
                progress.total = size if size is not None or not announced.isdigit() else int(announced)
            with out.open("xb") as written:
                try:
                    for chunk in response.iter_content(_CHUNK):
                        got += len(chunk)
                        if size is not None and got > size:
                            raise TransferError(f"the server sent more than the file's {size:,} bytes")
                        digest.update(chunk)
                        written.write(chunk)
                        if progress is not None:
                            progress.update(len(chunk))
                except requests.RequestException as exc:
                    raise TransferError(_broken(exc, got, timeout[1])) from exc
    finally:
        if progress is not None:
            progress.close()
    if size is not None and got != size:
        raise TransferError(f"the server sent {got:,} of the file's {size:,} bytes")
    return digest.hexdigest()


def _broken(exc: requests.RequestException, got: int, read_timeout: float) -> str:
    """Why a transfer under way stopped, with the bytes it had sent (requests wraps a read
    that timed out in a ``ConnectionError``)."""
    import urllib3

    timeout = urllib3.exceptions.TimeoutError
    if isinstance(exc, requests.Timeout) or any(isinstance(a, timeout) for a in exc.args):
        return f"the server sent nothing for {read_timeout:g} s" + (f" after {got:,} bytes" if got else "")
    return f"the transfer broke after {got:,} bytes ({type(exc).__name__}: {first_line(exc)})"
