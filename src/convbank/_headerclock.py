"""A ``requests`` session whose connections are made, and whose answers' status lines and
headers come, within their timeouts as a whole, and a whole download attempt's within them too.

``http.client`` reads an answer's head line by line, each read allowed the whole read timeout:
a server sending a byte of its headers every few seconds, or 100 headers each just under the
timeout, held a download for a hundred timeouts; a proxy's answer to ``CONNECT`` (an https URL
through an http proxy) was read the same way, each read allowed the connect timeout.
:func:`bounded_session` mounts an adapter whose connections (of whatever pool a manager uses:
plain, TLS, SOCKS) start a clock as they connect and as they wait for an answer; when the
timeout has passed before the connection is made or the head is whole, the clock shuts the
socket, which ends the read, and the answer is a timeout, as one that never began.

Within :func:`shared_bounds`, the connections and the heads of a chain of redirects share the
two timeouts, as one answer's: ten redirects each trickling its head within the read timeout
take the read timeout in all, not eleven of them.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager, suppress
from functools import cache
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["ConnectTooSlowError", "HeadTooSlowError", "bounded_session", "shared_bounds"]

_RETRY = 0.05
"""Seconds between a late clock's tries to shut a socket not yet made (a TCP connect under way)."""


class HeadTooSlowError(TimeoutError):
    """An answer whose status line and headers did not come within the read timeout: a
    ``TimeoutError``, which urllib3 reports as a read timeout."""


class ConnectTooSlowError(TimeoutError):
    """A connection (a proxy's answer to ``CONNECT`` included) not made within the connect timeout."""


_LATE = {"connect": ConnectTooSlowError, "head": HeadTooSlowError}
_left = threading.local()  # .seconds: {"connect": s, "head": s} left to this thread's attempt


@contextmanager
def shared_bounds(connect: float, head: float) -> Iterator[None]:
    """Within it, this thread's connections take ``connect`` seconds and its answers' heads
    ``head`` seconds in all (a chain of redirects, as one answer), each still within its own
    timeout."""
    _left.seconds = {"connect": connect, "head": head}
    try:
        yield
    finally:
        _left.seconds = None


def bounded_session() -> requests.Session:
    """A session whose connections are made, and whose answers' heads come, each whole within
    its timeout, or not at all."""
    session = requests.Session()
    adapter = _adapter_class()()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _bound(manager: Any) -> Any:
    """``manager`` (a pool manager or a proxy's), its pools' connections bounded."""
    manager.pool_classes_by_scheme = {
        scheme: _bounded_pool(pool) for scheme, pool in manager.pool_classes_by_scheme.items()
    }
    return manager


@cache
def _adapter_class() -> type[requests.adapters.HTTPAdapter]:
    """The adapter whose pool managers, its own and its proxies', bound their connections."""

    class Adapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            _bound(self.poolmanager)

        def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
            return _bound(super().proxy_manager_for(proxy, **proxy_kwargs))

    return Adapter


@cache
def _bounded_pool(pool: type[Any]) -> type[Any]:
    """``pool``, its connections' connects and heads bounded (one class per pool class, made once)."""
    if getattr(pool, "_head_bounded", False):
        return pool
    connection = pool.ConnectionCls

    class Bounded(connection):  # type: ignore[misc, valid-type]
        def connect(self) -> None:
            within_timeout(self, super().connect, "connect")

        def getresponse(self) -> Any:
            return within_timeout(self, super().getresponse)

    return type(pool.__name__, (pool,), {"ConnectionCls": Bounded, "_head_bounded": True})


def within_timeout(connection: Any, call: Callable[[], Any], phase: str = "head") -> Any:
    """``call()`` (``getresponse``, or ``connect`` for ``phase`` ``"connect"``) within
    ``connection.timeout`` seconds in all (the timeout urllib3 has just set), and within what
    :func:`shared_bounds` leaves of the phase; :class:`HeadTooSlowError` (or
    :class:`ConnectTooSlowError`) once the clock has shut the socket."""
    span = connection.timeout
    if not isinstance(span, (int, float)):  # no timeout: none to keep
        return call()
    left = (getattr(_left, "seconds", None) or {}).get(phase)
    span = span if left is None else min(span, left)
    if span <= 0:
        raise _LATE[phase](f"no whole answer within the time left ({left:g} s)")
    began = time.monotonic()
    try:
        if phase == "connect":  # a TCP connect under way has no socket to shut: it takes span itself
            return _connecting(connection, span, call)
        return _clocked(connection, span, call, phase)
    finally:
        if left is not None:
            _left.seconds[phase] = left - (time.monotonic() - began)


def _connecting(connection: Any, span: float, call: Callable[[], Any]) -> Any:
    """``connection``'s ``connect`` within ``span`` seconds: the socket is made with ``span``
    as its own timeout (a connect the clock cannot stop ends by it), then given back the
    connection's timeout for what follows on it."""
    own = connection.timeout
    connection.timeout = span
    try:
        return _clocked(connection, span, call, "connect")
    finally:
        connection.timeout = own
        sock = connection.sock
        if sock is not None:
            with suppress(OSError):
                sock.settimeout(own)


def _clocked(connection: Any, span: float, call: Callable[[], Any], phase: str) -> Any:
    """``call()``, the socket of ``connection`` shut once ``span`` seconds have passed."""
    lock = threading.Lock()
    state: list[str] = []  # "late" once the clock rang; "done" once the call returned
    clocks: list[threading.Timer] = []

    def ring() -> None:
        with lock:
            if state and state[-1] == "done":
                return
            if not state:
                state.append("late")
            sock = connection.sock
            if sock is None:  # still connecting: shut the socket as soon as it is there
                _start(clocks, _RETRY, ring)
                return
            with suppress(OSError):  # the plain socket's: a TLS one's state is left to its reader
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    _start(clocks, span, ring)
    response = None
    try:
        response = call()
    except BaseException as exc:  # the clock stopped whatever ends the wait (Ctrl-C too)
        if _stop(clocks, lock, state) and isinstance(exc, Exception):
            raise _LATE[phase](f"no whole answer within {span:g} s") from exc
        raise
    if _stop(clocks, lock, state):  # done as the clock rang: the socket is shut
        with suppress(Exception):
            (response if response is not None else connection).close()
        raise _LATE[phase](f"no whole answer within {span:g} s")
    return response


def _start(clocks: list[threading.Timer], span: float, ring: Callable[[], None]) -> None:
    """Start a clock ringing ``ring`` after ``span`` seconds, kept in ``clocks``."""
    clock = threading.Timer(span, ring)
    clock.daemon = True
    clocks.append(clock)
    clock.start()


def _stop(clocks: list[threading.Timer], lock: threading.Lock, state: list[str]) -> bool:
    """Stop the clocks; whether one had rung."""
    with lock:
        for clock in clocks:
            clock.cancel()
        late = bool(state)
        state.append("done")
    return late
