"""What the viewer runs on, below its routes: the security headers every response carries,
one pinned generation of the bank with its caches and query connections, and bounded
worker pools whose queries are interrupted on a time limit, a client gone or shutdown."""

from __future__ import annotations

import asyncio
import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convbank.errors import QueryError
from convbank.query import Corpus
from convbank.store import Bank, Snapshot, connect
from convbank.store.sql import damage_of, verify

__all__ = ["CSP", "SECURITY_HEADERS", "Limits"]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)

T = TypeVar("T")

SHUTTING_DOWN = "the viewer is shutting down"
"""The answer (503) to a request the server took but will not serve: it is stopping."""


@dataclass(frozen=True)
class Limits:
    """What one viewer process allows itself."""

    query_seconds: float = 10.0
    """Time limit of a SQL console query and of a listing's queries."""
    query_memory: str = "256MB"
    """Memory limit of one query (DuckDB's ``memory_limit``; nothing spills to disk)."""
    sql_workers: int = 2
    """SQL console queries running at once, each in a worker process of its own."""
    page_workers: int = 4
    """Pages being prepared at once (conversation reads, listings, charts)."""
    sql_queue: int = 64
    """SQL console queries waiting for a worker; more get 503 (retry)."""
    page_queue: int = 256
    """Pages waiting for a worker; more get 503 (retry)."""


class _SecurityHeaders:
    """Adds the security headers to every response (plain ASGI: also to error pages), and
    refuses requests another site's page makes in the background (an ``<img>`` or
    ``fetch`` pointing at ``/sql``): browsers mark them ``Sec-Fetch-Site: cross-site`` or
    ``same-site``; following a link to the viewer (a top-level navigation) stays allowed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        site = headers.get(b"sec-fetch-site", b"none")
        navigation = headers.get(b"sec-fetch-mode") == b"navigate" and headers.get(b"sec-fetch-dest") in (
            b"document",
            None,
        )
        if site in (b"cross-site", b"same-site") and not navigation:
            response = PlainTextResponse("requests from other sites are refused", status_code=403)
            for key, value in SECURITY_HEADERS:
                response.headers[key.decode()] = value.decode()
            await response(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in SECURITY_HEADERS if k not in names),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _HostPort:
    """Refuses (400) a request whose ``Host`` carries a port that is not a number in
    1..65535, or, for a loopback name or an address (names that reach this machine
    directly), not the port served (Starlette's ``TrustedHostMiddleware``, which checks the
    name, ignores the port: ``Host: 127.0.0.1:99999`` was answered). A ``Host`` without a
    port, and a name given with ``--allow-host`` with any port (a proxy in front serves on its
    own), pass on to the name's check."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not _port_served(scope):
            await PlainTextResponse("Invalid host header", status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _port_served(scope: Scope) -> bool:
    """Whether the ``Host`` of ``scope`` has no port, or a port allowed (see :class:`_HostPort`)."""
    value = next((v for k, v in scope.get("headers", []) if k == b"host"), b"").decode("latin-1")
    if value.startswith("["):  # an IPv6 address: [::1]:8000
        name, _, rest = value[1:].partition("]")
        if not rest.startswith(":"):
            return True  # no port, or no Host the name's check accepts
        port = rest[1:]
    else:
        name, colon, port = value.partition(":")
        if not colon:
            return True
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        return False
    server = scope.get("server")
    return server is None or not _names_this_machine(name.lower()) or int(port) == server[1]


def _names_this_machine(name: str) -> bool:
    """Whether ``name`` is a loopback name or an IP address (not a name a proxy may serve)."""
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------- one generation
class _Generation:
    """What the pages derive from one pinned generation: corpora, cached charts and labels,
    and a small pool of the viewer's own query connections (never given user SQL)."""

    def __init__(self, snapshot: Snapshot, limits: Limits) -> None:
        self.snapshot = snapshot
        self.limits = limits
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], Any] = {}
        self._pool: list[duckdb.DuckDBPyConnection] = []
        self._recent: OrderedDict[Hashable, Any] = OrderedDict()

    def cached(self, kind: str, name: str, make: Callable[[], T]) -> T:
        """``make()`` once per generation."""
        key = (kind, name)
        with self._lock:
            if key in self._cache:
                return self._cache[key]  # type: ignore[no-any-return]
        value = make()
        with self._lock:
            return self._cache.setdefault(key, value)  # type: ignore[no-any-return]

    def cached_lru(self, key: Hashable, make: Callable[[], T], size: int = 64) -> T:
        """``make()`` once per generation for the last ``size`` keys used (keys from
        requests, such as a listing's filters: the cache stays bounded)."""
        with self._lock:
            if key in self._recent:
                self._recent.move_to_end(key)
                return self._recent[key]  # type: ignore[no-any-return]
        value = make()
        with self._lock:
            self._recent[key] = value
            while len(self._recent) > size:
                self._recent.popitem(last=False)
        return value

    def corpus(self, name: str) -> Corpus:
        """The dataset's corpus in this generation."""
        return self.cached("corpus", name, lambda: Corpus(name, snapshot=self.snapshot))

    @contextmanager
    def connection(self, job: _Job) -> Iterator[duckdb.DuckDBPyConnection]:
        """One of the viewer's own connections, interruptible through ``job``."""
        with self._lock:
            con = self._pool.pop() if self._pool else None
        if con is None:
            con = connect(self.snapshot, threads=2, memory_limit=self.limits.query_memory)
        job.attach(con)
        try:
            yield con
            verify(con)  # what the page holds came from the files this connection checked
        except duckdb.Error as exc:  # a file damaged under the scan: named, as every reader names it
            verify(con)  # one written in place since the connection checked it, as such
            damage = damage_of(self.snapshot, exc)
            if damage is not None:
                raise damage from exc
            raise
        finally:
            job.attach(None)
            with self._lock:
                self._pool.append(con)


class _State:
    """The viewer's view of the bank: the current generation, refreshed when the manifest
    changes (a request keeps the generation it started with)."""

    def __init__(self, bank: Bank, limits: Limits) -> None:
        self.bank = bank
        self.limits = limits
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._generation: _Generation | None = None

    def current(self) -> _Generation:
        """The generation to serve this request from."""
        try:
            st = self.bank.manifest_path.stat()
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_ino, st.st_size)
        except OSError:
            stamp = None
        with self._lock:
            if self._generation is None or stamp != self._stamp:
                snapshot = self.bank.snapshot()
                if self._generation is None or snapshot.generation != self._generation.snapshot.generation:
                    self._generation = _Generation(snapshot, self.limits)
                else:
                    snapshot.close()
                self._stamp = stamp
            return self._generation


# ---------------------------------------------------------------------- bounded work
class _Job:
    """One piece of blocking work: knows the connection it runs on, to interrupt it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self.stopped: str | None = None
        self.started: float | None = None
        """When the current query started (None: no query running)."""

    def run(self, work: Callable[[_Job], T]) -> T:
        """Run ``work`` now (on a worker thread), unless the job was stopped while it waited."""
        if self.stopped:
            raise QueryError("the request was abandoned before it started")
        return work(self)

    def attach(self, con: duckdb.DuckDBPyConnection | None) -> None:
        """Note the connection the work queries now (None: none); the time limit counts
        from here."""
        with self._lock:
            self._con = con
            self.started = time.monotonic() if con is not None else None
            if con is not None and self.stopped:
                con.interrupt()

    def stop(self, why: str) -> None:
        """Interrupt the work's query, if any (``why``: timeout, gone, shutdown)."""
        with self._lock:
            self.stopped = self.stopped or why
            if self._con is not None:
                self._con.interrupt()


class _Workers:
    """A bounded thread pool for blocking work, with a queue limit (503 beyond it), a time
    limit, and interruption when the client disconnects or the server shuts down."""

    def __init__(self, name: str, workers: int, queue: int) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"convbank-{name}")
        self._capacity = workers + queue
        self._jobs: set[_Job] = set()

    async def run(self, request: Request, work: Callable[[_Job], T], seconds: float | None) -> T:
        """``work(job)`` on a worker thread; raises :class:`QueryError` when it was stopped
        by the time limit, HTTP 503 when too many requests wait."""
        if len(self._jobs) >= self._capacity:
            raise HTTPException(503, "the viewer is busy; retry in a moment")
        job = _Job()
        try:
            future = asyncio.wrap_future(self._pool.submit(job.run, work))
        except RuntimeError:  # the pool was shut down: the server is stopping
            raise HTTPException(503, SHUTTING_DOWN) from None
        self._jobs.add(job)
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=0.2)
                if done:
                    break
                if seconds and job.started is not None and time.monotonic() - job.started > seconds:
                    job.stop("timeout")
                elif await request.is_disconnected():
                    job.stop("gone")
            if future.cancelled():  # dropped from the queue by shutdown: an answer, not a traceback
                raise HTTPException(503, SHUTTING_DOWN)
            try:
                return future.result()
            except (duckdb.Error, QueryError) as exc:
                sql = exc.sql if isinstance(exc, QueryError) else None
                if job.stopped == "shutdown":
                    raise HTTPException(503, SHUTTING_DOWN) from exc
                if job.stopped == "timeout":
                    raise QueryError(
                        f"the query ran past the viewer's time limit of {seconds:g} s and was stopped",
                        sql=sql,
                        limit=seconds,
                    ) from exc
                if isinstance(exc, duckdb.OutOfMemoryException):
                    raise QueryError(
                        "the query needs more memory than the viewer allows one query; "
                        "select fewer rows or columns, or aggregate",
                        sql=sql,
                    ) from exc
                if isinstance(exc, duckdb.Error):
                    raise QueryError(f"SQL error: {str(exc).rstrip()}", sql=sql) from exc
                raise
        finally:
            if not future.done():
                job.stop("gone")  # cancelled: the client left or the server is stopping
            self._jobs.discard(job)

    def shutdown(self) -> None:
        """Interrupt every running query and stop taking work."""
        for job in list(self._jobs):
            job.stop("shutdown")
        self._pool.shutdown(wait=False, cancel_futures=True)
