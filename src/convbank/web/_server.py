"""How ``convbank serve`` runs uvicorn: HTTP/1.1 (h11) with a deadline for a request's
headers, so that clients that connect and send nothing, or headers a byte at a time, are
disconnected instead of holding the server's connections (uvicorn itself only times out
idle keep-alive connections after a response).

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
import signal
import sys
import threading
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "HEADER_SECONDS",
    "KEEP_ALIVE_SECONDS",
    "MAX_CONNECTIONS",
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
"""Connections and requests at once; at the limit, a new connection closes the idle ones that
waited longest, and requests beyond it get 503 until some end."""


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers are not complete
    :data:`HEADER_SECONDS` after it opened, or after the request's first byte on a kept-alive
    connection (an idle one is uvicorn's to close, after :data:`KEEP_ALIVE_SECONDS`); a
    connection whose request body is still coming once its response is sent is closed (every
    byte of it would put uvicorn's idle timer off); at :data:`MAX_CONNECTIONS`, a new
    connection closes the longest idle ones (:meth:`_make_room`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._since = 0.0
        """When the connection opened or last sent a response (its wait for a request began)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._since = self.loop.time()
        self._arm()
        if len(self.connections) >= MAX_CONNECTIONS:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # a request's headers are in
            self._disarm()
        elif self._deadline is None and self.conn.trailing_data[0]:  # a request has begun
            self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._since = self.loop.time()
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.transport.close()  # a body nobody reads: its bytes would hold the connection

    def _waiting(self) -> bool:
        """Between requests: none yet or its response sent, nothing of the next one come."""
        return (
            (self.cycle is None or self.cycle.response_complete)
            and self.conn.their_state is h11.IDLE
            and not self.conn.trailing_data[0]
            and not self.transport.is_closing()
        )

    def _make_room(self) -> None:
        """At the connection limit, close the connections that have waited longest for a
        request, so that a new client is served instead of refused (503) while idle ones hold
        the server for their keep-alive time; a client opens a new connection for a closed
        idle one, as after a timeout."""
        waiting = sorted(
            (c for c in self.connections if c is not self and isinstance(c, HeaderDeadline) and c._waiting()),
            key=lambda c: c._since,
        )
        for connection in waiting[: len(self.connections) - MAX_CONNECTIONS + 1]:
            connection.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(HEADER_SECONDS, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration of the viewer (``options`` go to :class:`uvicorn.Config`)."""
    return uvicorn.Config(
        app,
        http=HeaderDeadline,
        log_level="warning",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        limit_concurrency=MAX_CONNECTIONS,
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
