"""One HTTP(S) download, bounded and hashed while it is written.

:func:`download` writes the body of a URL to a new file and returns its sha256. What it takes
is the publisher's file and nothing else:

- only a ``200`` answer is a file: any other status (a ``302`` without a ``Location``, a
  ``206``, a ``404``) is :class:`HTTPStatusError`;
- redirects are followed one by one, at most :data:`MAX_REDIRECTS`, and only to ``http`` or
  ``https`` URLs (a ``file://`` or ``ftp://`` target is refused, never opened);
- with the file's size declared, the transfer stops as soon as it outgrows it (an endless
  body, a ``Content-Encoding: gzip`` bomb), and a body of any other size is refused; with no
  size declared, as soon as it outgrows ``most``;
- an answer whose status line and headers are not whole within the read timeout (a server
  trickling them, each read within it) is a timeout, as one never begun, and so is a connection
  not made within the connect timeout (a proxy trickling its answer to ``CONNECT``); a chain of
  redirects shares the two timeouts, as one answer (:mod:`._headerclock`);
- a body in a ``Content-Encoding`` is decoded by :mod:`._decoding`, each coding read to its
  end (a compressed stream cut short is refused, never taken as the file);
- a transfer that stalls, trickles (fewer than :data:`SLOWEST` bytes a second over a read
  timeout's span, watched from a thread that shuts the socket) or breaks says after how many
  bytes.

Each failure is :class:`UnreachableError` (no connection was made) or :class:`TransferError`, whose message
says what happened in one line; the caller names the file and where to put it.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin, urlsplit

from convbank._archive import first_line
from convbank._decoding import ASKED, EncodingError, decoded, finish, streams
from convbank._lazy import lazy
from convbank._wording import counted, url_shown
from convbank.settings import env_number

if TYPE_CHECKING:
    from collections.abc import Iterator

    import requests
    import urllib3
else:
    requests = lazy("requests")
    urllib3 = lazy("urllib3")

__all__ = [
    "DOWNLOAD_MAX",
    "MAX_REDIRECTS",
    "SLOWEST",
    "HTTPStatusError",
    "Progress",
    "TransferError",
    "UnreachableError",
    "download",
    "download_limit",
]

MAX_REDIRECTS = 10
"""Redirects followed before a download is refused."""

_UNANSWERED = (ConnectionResetError, BrokenPipeError)
"""How a request on a connection the server had closed fails, with no answer read
(``http.client.RemoteDisconnected`` is a ``ConnectionResetError``): sent once more (:func:`_sent`)."""

SLOWEST = 1024
"""Bytes a second a transfer must average over each span of the read timeout: a server that
trickles (a byte a second, never idle for a whole read timeout) is stopped after one span."""

DOWNLOAD_MAX = 1 << 30
"""The most bytes downloaded for a file of no published size, unless
``CONVBANK_DOWNLOAD_MAX_BYTES`` says otherwise."""

_CHUNK = 1 << 16
_BEYOND = "the most taken for a file of no published size (CONVBANK_DOWNLOAD_MAX_BYTES raises it)"


def download_limit() -> int:
    """The most bytes downloaded for a file of no published size: ``CONVBANK_DOWNLOAD_MAX_BYTES``
    (``8G``, ``500M``), by default :data:`DOWNLOAD_MAX`."""
    return env_number("CONVBANK_DOWNLOAD_MAX_BYTES", DOWNLOAD_MAX, size=True)


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
    redirects to ``http(s)`` URLs, their connections and heads within the connect and read
    timeouts in all (:func:`._headerclock.shared_bounds`)."""
    from convbank._headerclock import shared_bounds

    with shared_bounds(*timeout):
        return _followed(session, url, timeout)


def _followed(session: requests.Session, url: str, timeout: tuple[float, float]) -> requests.Response:
    """The streamed ``200`` answer for ``url`` and the redirects it leads to."""
    came_from = None
    for hops in range(MAX_REDIRECTS + 1):
        host, refused = _http_host(url)
        if refused is not None:
            shown = f"{url_shown(url)!r}"
            where = f"{url_shown(came_from)} redirects to {shown}, which" if came_from else shown
            raise TransferError(f"{where} {refused}")
        response = _get(session, url, host, timeout, hops)
        if not response.is_redirect:
            if response.status_code != 200:
                response.close()
                raise HTTPStatusError(response.status_code)
            return response
        came_from, url = url, urljoin(url, response.headers["Location"])
        response.close()
    raise TransferError(f"more than {MAX_REDIRECTS} redirects (the last to {url_shown(url)})")


def _get(
    session: requests.Session, url: str, host: str, timeout: tuple[float, float], hops: int
) -> requests.Response:
    """The streamed answer for ``url`` of ``host``, the ``hops``-th redirect's target; what
    went wrong, a :class:`TransferError` saying it in one line."""
    try:
        return _sent(session, url, timeout)
    except requests.ConnectionError as exc:  # ConnectTimeout included
        if _late_connection(exc):
            raise UnreachableError(
                f"cannot connect to {host}{_through(url)} within {timeout[0]:g} s{_of(hops)}"
            ) from exc
        if _connected(exc):
            raise TransferError(f"{host} sent no valid HTTP answer ({_reason(exc)})") from exc
        raise UnreachableError(f"cannot connect to {host}{_through(url)}") from exc
    except requests.ReadTimeout as exc:
        if _late_connection(exc):
            raise UnreachableError(
                f"cannot connect to {host}{_through(url)} within {timeout[0]:g} s{_of(hops)}"
            ) from exc
        raise TransferError(f"{url_shown(url)} sent no answer within {timeout[1]:g} s{_of(hops)}") from exc
    except (requests.RequestException, ValueError) as exc:  # urllib3's LocationParseError
        raise TransferError(f"{url_shown(url)}: {type(exc).__name__}: {first_line(exc)}") from exc


def _sent(session: requests.Session, url: str, timeout: tuple[float, float]) -> requests.Response:
    """``GET url``, streamed, sent once more on a new connection where the server closed the
    connection without an answer or reset it: a kept-alive connection (the one a redirect's
    answer left open) that the server had closed as the request went out, the race every
    HTTP/1.1 client meets; a ``GET`` changes nothing, so a second one is safe (before: the
    redirect failed, `sent no valid HTTP answer (RemoteDisconnected ...)`, 1 of 6 to 6 of 6
    runs as the server's timing went; found by pass 22). A server that does so again fails."""
    for attempt in (1, 2):
        try:
            return session.get(
                url, stream=True, timeout=timeout, allow_redirects=False, headers={"Accept-Encoding": ASKED}
            )
        except requests.ConnectionError as exc:
            if attempt == 2 or not isinstance(_innermost(exc), _UNANSWERED):
                raise
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _through(url: str) -> str:
    """`` through the proxy HOST:PORT`` where the environment (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, less ``NO_PROXY``) sends ``url`` through one, its credentials left out; else
    nothing: a connection that failed is the proxy's as much as the server's."""
    try:
        proxy = requests.utils.select_proxy(url, requests.utils.get_environ_proxies(url))
        if not proxy:
            return ""
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return f" through the proxy {parts.netloc.rpartition('@')[2]}"
    except ValueError:  # a proxy URL that is none: requests has said so already
        return ""


def _of(hops: int) -> str:
    """What a time bound covers where ``hops`` redirects came before: all of them too."""
    return f" (in all, with the {hops} redirect{'s' * (hops > 1)} before it)" if hops else ""


def _late_connection(exc: BaseException) -> bool:
    """Whether ``exc`` comes of a connection not made within the connect timeout as a whole
    (a proxy trickling its answer to ``CONNECT``): a :class:`._headerclock.ConnectTooSlowError`
    among its causes, reasons or arguments."""
    from convbank._headerclock import ConnectTooSlowError

    seen: BaseException | None = exc
    for _ in range(12):  # requests' error, urllib3's, the clock's
        if seen is None or isinstance(seen, ConnectTooSlowError):
            break
        first = seen.args[0] if seen.args else None
        deeper = seen.__cause__ or seen.__context__ or getattr(seen, "reason", None) or first
        seen = deeper if isinstance(deeper, BaseException) else None
    return isinstance(seen, ConnectTooSlowError)


def _http_host(url: str) -> tuple[str, str | None]:
    """The host of an http(s) URL, and why another is refused (None: it is not)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:  # http://[zz/x
        return "", f"is not a valid URL ({first_line(exc)})"
    return (
        (host, None) if parts.scheme.lower() in ("http", "https") and host else ("", "is not an http(s) URL")
    )


def _connected(exc: requests.ConnectionError) -> bool:
    """Whether a connection was made before it failed (the server closed it, sent something
    other than HTTP, too many or too long headers, a TLS failure), rather than none at all
    (refused, unresolved, timed out connecting, a proxy's failure)."""
    cause = exc.args[0] if exc.args else None
    reason = getattr(cause, "reason", cause)
    never = (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.ProxyError)  # and subclasses
    return not isinstance(exc, requests.exceptions.ProxyError) and not isinstance(reason, never)


def _reason(exc: requests.ConnectionError) -> str:
    """The innermost reason of a failed request: ``RemoteDisconnected: Remote end closed
    connection without response``."""
    inner = _innermost(exc)
    return f"{type(inner).__name__}: {first_line(inner)}"


def _innermost(exc: BaseException) -> BaseException:
    """The error at the bottom of requests', urllib3's, http.client's or ssl's wrappings."""
    inner = exc
    for _ in range(8):
        deeper = getattr(inner, "reason", inner.args[-1] if inner.args else None)
        if not isinstance(deeper, BaseException):
            break
        inner = deeper
    return inner


def download(
    url: str,
    out: Path,
    *,
    size: int | None,
    timeout: tuple[float, float],
    progress: Progress | None = None,
    most: int | None = None,
) -> str:
    """Write the body of ``url`` to the new file ``out`` and return its sha256; with ``size``
    declared, refuse a body of any other size before writing a byte more than it; without,
    refuse one of more than ``most`` bytes (:func:`download_limit` by default) as soon as it
    outgrows them."""
    import hashlib  # here: the catalog's commands import this module, and no hashing

    from convbank._headerclock import bounded_session

    most = download_limit() if most is None else most

    digest = hashlib.sha256()
    got = 0
    try:
        with bounded_session() as session, _answer(session, url, timeout) as response:
            announced = _announced(response)
            _refuse_announced(announced, size, most)
            if progress is not None:
                progress.total = size if size is not None else announced
            with out.open("xb") as written:
                for chunk in _chunks(response, timeout[1]):
                    got += len(chunk)
                    if size is not None and got > size:
                        raise TransferError(f"the server sent more than the file's {counted(size, 'byte')}")
                    if size is None and got > most:
                        raise TransferError(f"the server sent more than {most:,} bytes, {_BEYOND}")
                    digest.update(chunk)
                    written.write(chunk)
                    if progress is not None:
                        progress.update(len(chunk))
    finally:
        if progress is not None:
            progress.close()
    if size is not None and got != size:
        raise TransferError(f"the server sent {got:,} of the file's {counted(size, 'byte')}")
    return digest.hexdigest()


def _announced(response: requests.Response) -> int | None:
    """The body's size the server announces, where it is that of the file (no
    ``Content-Encoding``): its ``Content-Length`` as urllib3 reads the body by it (none where
    the header is no length: ``²``, thousands of digits, ``-1``, chunked)."""
    coding = response.headers.get("Content-Encoding", "identity").strip().lower()
    announced: int | None = response.raw.length_remaining
    return announced if coding in ("", "identity") else None


def _refuse_announced(announced: int | None, size: int | None, most: int) -> None:
    """A :class:`TransferError` for a body announced at another size than the file's, or at
    more than ``most`` bytes for a file of no published size."""
    if announced is None:
        return
    if size is not None and announced != size:
        raise TransferError(
            f"the server announces {counted(announced, 'byte')}, but the file is {counted(size, 'byte')}"
        )
    if size is None and announced > most:
        raise TransferError(
            f"the server announces {counted(announced, 'byte')}, more than {most:,}, {_BEYOND}"
        )


def _chunks(response: requests.Response, span: float) -> Iterator[bytes]:
    """The body as each read brings it (never waiting to fill a chunk, which a trickling server
    never would), decoded by :mod:`._decoding` (each coding read to its end), stopped by
    :func:`_watch` where it averages fewer than :data:`SLOWEST` bytes a second over a span of
    ``span`` seconds; a broken or stalled read is a :class:`TransferError` saying after how
    many bytes."""
    import threading

    got = [0]  # the decoded bytes so far, which the watch reads
    slow: list[str] = []  # why the watch stopped the transfer
    done = threading.Event()
    threading.Thread(target=_watch, args=(response, got, slow, done, span), daemon=True).start()
    try:
        chain = streams(response.headers.get("Content-Encoding", ""))
        while True:
            try:
                read = response.raw.read1(_CHUNK, decode_content=False)
            except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
                raise TransferError(_broken(exc, got[0], span, slow)) from exc
            if slow:  # checked before an end, which the watch's shutdown may have made
                raise TransferError(slow[0])
            if not read:
                finish(chain, got[0])
                return
            for chunk in decoded(chain, read):
                got[0] += len(chunk)
                yield chunk
    except EncodingError as exc:
        raise TransferError(str(exc)) from exc
    finally:
        done.set()


def _watch(response: requests.Response, got: list[int], slow: list[str], done: Any, span: float) -> None:
    """Every ``span`` seconds until ``done`` is set: where fewer than :data:`SLOWEST` bytes a
    second came (a trickle, or a ``gzip`` body of empty blocks that decodes to nothing, inside
    one read that never returns), say why in ``slow`` and shut the socket, which ends the read."""
    last = 0
    while not done.wait(span):
        if got[0] - last < SLOWEST * span:
            after = f", after {counted(last, 'byte')}" if last else ""
            sent = f"the server sent {counted(got[0] - last, 'byte')} in {span:g} s"
            slow.append(f"{sent}, fewer than {SLOWEST:,} a second{after}")
            with suppress(Exception):  # urllib3 before 2.3 cannot: the next read that returns says it
                response.raw.shutdown()
            return
        last = got[0]


def _broken(exc: Exception, got: int, read_timeout: float, slow: list[str]) -> str:
    """Why a transfer under way stopped, with the bytes it had sent (urllib3's errors, or
    requests' wrapping them: a read that timed out in a ``ConnectionError``); a read broken
    by the watch's shutdown says the watch's reason."""
    timeout = urllib3.exceptions.TimeoutError
    if isinstance(exc, (requests.Timeout, timeout)) or any(isinstance(a, timeout) for a in exc.args):
        return f"the server sent nothing for {read_timeout:g} s" + (
            f" after {counted(got, 'byte')}" if got else ""
        )
    if slow:
        return slow[0]
    return f"the transfer broke after {counted(got, 'byte')} ({type(exc).__name__}: {first_line(exc)})"
