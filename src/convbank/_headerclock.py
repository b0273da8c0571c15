"""A ``requests`` session whose every answer's status line and headers come within the read
timeout as a whole.

``http.client`` reads an answer's head line by line, each read allowed the whole read timeout:
a server sending a byte of its headers every few seconds, or 100 headers each just under the
timeout, held a download for a hundred timeouts. :func:`bounded_session` mounts an adapter whose
connections (of whatever pool a manager uses: plain, TLS, SOCKS) start a clock as they wait for
an answer; when the read timeout has passed before the head is whole, the clock shuts the
socket, which ends the read, and the answer is a read timeout, as one that never began.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from functools import cache
from typing import Any

import requests

__all__ = ["HeadTooSlowError", "bounded_session"]


class HeadTooSlowError(TimeoutError):
    """An answer whose status line and headers did not come within the read timeout: a
    ``TimeoutError``, which urllib3 reports as a read timeout."""


def bounded_session() -> requests.Session:
    """A session whose answers' heads each come whole within the read timeout, or not at all."""
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
    """``pool``, its connections' heads bounded (one class per pool class, made once)."""
    if getattr(pool, "_head_bounded", False):
        return pool
    connection = pool.ConnectionCls

    class Bounded(connection):  # type: ignore[misc, valid-type]
        def getresponse(self) -> Any:
            return within_timeout(self, super().getresponse)

    return type(pool.__name__, (pool,), {"ConnectionCls": Bounded, "_head_bounded": True})


def within_timeout(connection: Any, getresponse: Any) -> Any:
    """``getresponse()``, the head read within ``connection.timeout`` seconds in all (the read
    timeout urllib3 has just set), or :class:`HeadTooSlowError` once the clock has shut the socket."""
    span, sock = connection.timeout, connection.sock
    if not isinstance(span, (int, float)) or sock is None:  # no read timeout: none to keep
        return getresponse()
    lock = threading.Lock()
    state: list[str] = []  # "late" once the clock shut the socket; "done" once the head came

    def ring() -> None:
        with lock:
            if not state:
                state.append("late")
                with suppress(OSError):  # the plain socket's: a TLS one's state is left to its reader
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)

    clock = threading.Timer(span, ring)
    clock.daemon = True
    clock.start()
    response = None
    try:
        response = getresponse()
    except BaseException as exc:  # the clock stopped whatever ends the wait (Ctrl-C too)
        if _stop(clock, lock, state) and isinstance(exc, Exception):
            raise HeadTooSlowError(f"no whole answer within {span:g} s") from exc
        raise
    if _stop(clock, lock, state):  # the head came as the clock rang: the socket is shut
        with suppress(Exception):
            response.close()
        raise HeadTooSlowError(f"no whole answer within {span:g} s")
    return response


def _stop(clock: threading.Timer, lock: threading.Lock, state: list[str]) -> bool:
    """Stop ``clock``; whether it had rung."""
    clock.cancel()
    with lock:
        late = bool(state)
        state.append("done")
    return late
