"""How ``convbank serve`` runs uvicorn: HTTP/1.1 (h11) with a deadline for a request's
headers, so that clients that connect and send nothing, or headers a byte at a time, are
disconnected instead of holding the server's connections (uvicorn itself only times out
idle keep-alive connections after a response).

A connection still sending a request's headers costs a socket and a few kilobytes, no work:
it does not count against :data:`MAX_CONNECTIONS` (the 503 limit), so clients that send half
their headers and reconnect as soon as they are closed, however many, leave room for
complete requests. Up to :data:`MAX_UNHEADED` of them are held until their deadline (holding
them is cheaper than closing them: a closed one reconnects at once); beyond that the one
that began its headers longest ago is closed, then silent ones older than
:data:`SILENT_GRACE_SECONDS`; a connection opened a moment ago, whose request may not have
been read yet, is never closed for room.

An idle kept-alive connection is kept longer than the usual clients keep theirs (httpx 5 s,
aiohttp 15 s): the client, which starts counting only once it has read the response, must
give a connection up before the server closes it, or a request sent just as the server
closes gets no answer (HTTP/1.1's keep-alive race).

Example::

    config = server_config(app)
    uvicorn.Server(config).run()
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import threading
import weakref
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

__all__ = [
    "DEADLINE_CLOSES_PER_SECOND",
    "HEADER_SECONDS",
    "KEEP_ALIVE_SECONDS",
    "MAX_CONNECTIONS",
    "MAX_UNHEADED",
    "SILENT_GRACE_SECONDS",
    "STOP_SECONDS",
    "HeaderDeadline",
    "exit_now",
    "exit_soon",
    "server_config",
]

HEADER_SECONDS = 5.0
"""Seconds a client has, from connecting or from the first byte of a request on a kept-alive
connection, to send the request's complete headers."""

KEEP_ALIVE_SECONDS = 30
"""Seconds an idle keep-alive connection is kept after a response (longer than clients'
own idle limits, see above)."""

MAX_CONNECTIONS = 1000
"""Connections serving a request or kept alive after one; at the limit, a new connection
closes the idle ones that waited longest, and requests beyond it get 503 until some end.
Connections still sending a request's headers are not counted (:data:`MAX_UNHEADED`)."""

HEADER_BYTES = 16 * 1024
"""Bytes of a request's headers held before they are complete: beyond them the answer is 400
and the connection is closed, so that a connection without its headers costs at most this
(h11's own limit, said here, as Node's 16 KiB; nginx allows 1 KiB plus 4 of 8 KiB)."""

_HEAD_END = re.compile(rb"\n\r?\n")
"""Where a request's headers end, as h11 finds it: a blank line."""


def _head_too_long(buffered: bytes) -> bool:
    """Whether the request at the start of ``buffered`` has more than :data:`HEADER_BYTES` of
    headers, ended or not: h11 refuses only headers still incomplete past its limit, and a
    request's whole headers come in one read (about 90 KB of them, or 10,000 lines, answered
    200 before)."""
    return len(buffered) > HEADER_BYTES and _HEAD_END.search(buffered, 0, HEADER_BYTES + 2) is None


MAX_UNHEADED = 20000
"""Connections without a request's complete headers held at once (fewer where the open-files
limit is lower); beyond it, the oldest are closed."""

DEADLINE_CLOSES_PER_SECOND = 400
"""With many connections without headers, the header deadline grows to
``held / DEADLINE_CLOSES_PER_SECOND`` seconds: a client closed at its deadline may reconnect
at once, and accepting it again costs more than holding it."""

SILENT_GRACE_SECONDS = 1.0
"""A connection that has sent nothing is closed for room only once it is this old (one just
opened may hold a request not read yet)."""

_RESERVE_FILES = 100
"""Open files kept for the server's own use (the bank, its query workers, the listener)."""


def _open_files(wanted: int) -> int:
    """Raise this process's open-files limit towards ``wanted`` (the hard limit allows it); the
    limit now."""
    if sys.platform == "win32":  # pragma: no cover - no such limit
        return wanted
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
        except (ValueError, OSError):
            pass
    return wanted if soft == resource.RLIM_INFINITY else soft


class _Unheaded:
    """One server's connections without a request's complete headers, oldest first: those
    that have sent nothing since they opened, and those with a request begun."""

    def __init__(self) -> None:
        # the open-files limit as server_config left it (0: raise nothing)
        self.cap = max(64, min(MAX_UNHEADED, _open_files(0) - MAX_CONNECTIONS - _RESERVE_FILES))
        self.silent: dict[HeaderDeadline, float] = {}
        """Connections that have sent nothing yet, with when they opened."""
        self.begun: dict[HeaderDeadline, None] = {}
        """Connections with part of a request's headers, in the order they began them."""

    def __len__(self) -> int:
        return len(self.silent) + len(self.begun)

    def discard(self, connection: HeaderDeadline) -> None:
        self.silent.pop(connection, None)
        self.begun.pop(connection, None)

    def make_room(self, now: float) -> None:
        """Beyond :attr:`cap`, close the connections that began their headers longest ago,
        then silent ones past their grace."""
        while len(self) > self.cap:
            if self.begun:
                connection = next(iter(self.begun))
            else:
                connection, opened = next(iter(self.silent.items()))
                if now - opened < SILENT_GRACE_SECONDS:
                    return
            self.discard(connection)
            connection.transport.close()


_UNHEADED: weakref.WeakKeyDictionary[ServerState, _Unheaded] = weakref.WeakKeyDictionary()


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers are not complete
    :data:`HEADER_SECONDS` after it opened, or after the request's first byte on a kept-alive
    connection (an idle one is uvicorn's to close, after :data:`KEEP_ALIVE_SECONDS`); a
    connection whose request body is still coming once its response is sent is closed (every
    byte of it would put uvicorn's idle timer off); connections without a request's headers
    are held apart (:class:`_Unheaded`, not counted against :data:`MAX_CONNECTIONS`); at
    :data:`MAX_CONNECTIONS`, a new connection closes the longest idle ones (:meth:`_make_room`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._limit: int | None = None
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._since = 0.0
        """When the connection opened or last sent a response (its wait for a request began)."""
        unheaded = _UNHEADED.get(self.server_state)
        if unheaded is None:
            unheaded = _UNHEADED[self.server_state] = _Unheaded()
        self._unheaded = unheaded
        self._held: int | None = 0
        """Bytes h11 holds of a request not yet begun, counted as they come; None where h11
        took a request's bytes since (read from h11 once, when next wanted: its
        ``trailing_data`` is a copy of up to :data:`HEADER_BYTES`, which each event of a
        connection still sending its headers made before)."""

    @property
    def limit_concurrency(self) -> int | None:
        """uvicorn's limit on connections (503 beyond it): it counts them all, so the limit
        grows by the connections still sending their headers, which are not counted."""
        return None if self._limit is None else self._limit + len(self._unheaded)

    @limit_concurrency.setter
    def limit_concurrency(self, value: int | None) -> None:
        self._limit = value

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._since = self.loop.time()
        self._arm()
        self._unheaded.silent[self] = self._since
        self._unheaded.make_room(self._since)
        counted = len(self.connections) - len(self._unheaded) + 1  # this one too, with its headers in
        if counted >= MAX_CONNECTIONS:
            self._make_room(counted - MAX_CONNECTIONS + 1)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._unheaded.discard(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._held is not None:
            self._held += len(data)
        super().data_received(data)

    def _buffered(self) -> int:
        """Bytes h11 holds of a request not yet begun (see :attr:`_held`)."""
        if self._held is None:
            self._held = len(self.conn.trailing_data[0])
        return self._held

    def handle_events(self) -> None:
        if (
            self.conn.their_state is h11.IDLE
            and self._buffered() > HEADER_BYTES
            and _head_too_long(self.conn.trailing_data[0])
        ):
            self.send_400_response("Request headers too long.")  # come whole in one read, or not
            return
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle or self.conn.their_state is not h11.IDLE:
            self._held = None  # a request taken: what h11 holds is read again, once
        if self.conn.their_state is not h11.IDLE:  # a request's headers are in
            self._disarm()
            self._unheaded.discard(self)
        elif self._buffered() and self not in self._unheaded.begun:  # a request has begun
            if self._deadline is None:
                self._arm()
            self._unheaded.silent.pop(self, None)
            self._unheaded.begun[self] = None
            self._unheaded.make_room(self.loop.time())

    def send_400_response(self, msg: str) -> None:
        """uvicorn's 400 for bytes h11 cannot parse, the connection then closed. A request
        whose headers were fine and whose body is not (a bad chunk size) is already the
        app's: its answer is dropped as for a client gone, since the 400 was the answer
        (before: the app's ``send`` raised h11's ``LocalProtocolError``, a traceback of 45
        lines in the log for each such request of 100 bytes)."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        super().send_400_response(msg)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._since = self.loop.time()
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.transport.close()  # a body nobody reads: its bytes would hold the connection

    def _waiting(self) -> bool:
        """Kept alive between requests: a response sent, nothing of the next request come."""
        return (
            self.cycle is not None
            and self.cycle.response_complete
            and self.conn.their_state is h11.IDLE
            and not self._buffered()
            and not self.transport.is_closing()
        )

    def _make_room(self, excess: int) -> None:
        """At the connection limit, close the ``excess`` connections that have waited longest
        for a request (as many as leave this one and one more room, as before), so that a
        new client is served instead of refused (503) while idle ones hold the server for
        their keep-alive time; a client opens a new connection for a closed idle one, as
        after a timeout."""
        waiting = sorted(
            (c for c in self.connections if c is not self and isinstance(c, HeaderDeadline) and c._waiting()),
            key=lambda c: c._since,
        )
        for connection in waiting[:excess]:
            connection.transport.close()

    def _arm(self) -> None:
        self._disarm()
        seconds = max(HEADER_SECONDS, len(self._unheaded) / DEADLINE_CLOSES_PER_SECOND)
        self._deadline = self.loop.call_later(seconds, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration of the viewer (``options`` go to :class:`uvicorn.Config`);
    raises the process's open-files limit, within the hard limit, to what the connection
    limits need."""
    _open_files(MAX_CONNECTIONS + MAX_UNHEADED + _RESERVE_FILES)
    return uvicorn.Config(
        app,
        http=HeaderDeadline,
        log_level="warning",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=HEADER_BYTES,
        **options,
    )


STOP_SECONDS = 0.6
"""Seconds the viewer gives its clients to be answered after SIGTERM or Ctrl-C (queued pages
get a 503 at once, queries are stopped at once) before it exits anyway: a client that does
not read its response held uvicorn's graceful shutdown for 5 s."""


def exit_now(signum: int, frame: object) -> None:
    """The viewer's end once uvicorn has shut down (connections answered or closed, queries
    and workers stopped), or :data:`STOP_SECONDS` after the signal: exit 0 at once. The
    interpreter's own teardown of a loaded viewer (DuckDB, Arrow, caches) took a second more
    (measured: 0.3 s to here, 1.3 s to the exit), and the viewer writes nothing that it could
    leave half-done. Example: ``signal.signal(signal.SIGTERM, exit_now)``."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def exit_soon() -> None:
    """:func:`exit_now` in :data:`STOP_SECONDS`, whatever still runs (from the signal handler
    that starts uvicorn's shutdown). Example: ``exit_soon()`` in ``Server.handle_exit``."""
    timer = threading.Timer(STOP_SECONDS, exit_now, (signal.SIGTERM, None))
    timer.daemon = True
    timer.start()
