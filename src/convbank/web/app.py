"""Routes of the viewer. Every page is rendered server-side with autoescaping; the pages
carry no scripts and a Content-Security-Policy that forbids them.

Under load: every page reads one pinned generation of the bank (a rebuild never shows half
a bank), blocking work runs on bounded thread pools off the event loop, SQL runs on a fresh
connection per query that can reach nothing but the bank's tables, within a time and a
memory limit, and is interrupted when the client goes away or the server stops. Requests
whose ``Host`` is not one the server answers to are refused (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import csv
import io
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import jinja2
import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convbank import catalog
from convbank._version import __version__
from convbank.errors import (
    ConvbankError,
    ConversationNotFoundError,
    DamagedBankError,
    NotBuiltError,
    QueryError,
    UnknownDatasetError,
)
from convbank.query import Corpus
from convbank.store import Bank, Snapshot, connect
from convbank.store.sandbox import Result, SqlSandbox, parse_size
from convbank.web.data import (
    SORTS,
    constant_turn_meta,
    labels,
    list_conversations,
    selection_stats,
    show_value,
    turn_views,
)

__all__ = ["LOOPBACK_HOSTS", "Limits", "create_app"]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
"""The names a viewer on a loopback address answers to."""
SQL_ROWS = 1000
SQL_CELL_CHARS = 10_000

EXAMPLES = (
    (
        "Conversations per dataset and split",
        "SELECT dataset, config, split, count(*) AS conversations FROM conversations "
        "GROUP BY ALL ORDER BY ALL",
    ),
    (
        "Annotation labels per dataset and layer",
        "SELECT dataset, layer, label, count(*) AS n FROM annotations GROUP BY ALL ORDER BY n DESC",
    ),
    (
        "Longest turns",
        "SELECT dataset, conversation_id, turn_index, length(text) AS chars FROM turns "
        "ORDER BY chars DESC LIMIT 20",
    ),
)
"""The SQL console's generic examples; each dataset adds its own (:attr:`Dataset.sql_examples`)."""


def examples() -> list[tuple[str, str]]:
    """The SQL console's examples: the generic ones, then each dataset's."""
    return [*EXAMPLES[:1], *(e for ds in catalog.catalog for e in ds.sql_examples), *EXAMPLES[1:]]


_env = jinja2.Environment(
    loader=jinja2.PackageLoader("convbank.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
_env.filters["show"] = show_value
_json = msgspec.json.Encoder()
T = TypeVar("T")


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
        self._jobs.add(job)
        future = asyncio.wrap_future(self._pool.submit(job.run, work))
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=0.2)
                if done:
                    break
                if seconds and job.started is not None and time.monotonic() - job.started > seconds:
                    job.stop("timeout")
                elif await request.is_disconnected():
                    job.stop("gone")
            try:
                return future.result()
            except (duckdb.Error, QueryError) as exc:
                if job.stopped == "timeout":
                    raise QueryError(
                        f"the query ran past the viewer's time limit of {seconds:g} s and was stopped"
                    ) from exc
                if isinstance(exc, duckdb.OutOfMemoryException):
                    raise QueryError(
                        "the query needs more memory than the viewer allows one query; "
                        "select fewer rows or columns, or aggregate"
                    ) from exc
                if isinstance(exc, duckdb.Error):
                    raise QueryError(f"SQL error: {str(exc).rstrip()}") from exc
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


def _render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(template).render(version=__version__, **context)
    return HTMLResponse(html, status_code=status)


def _dataset(name: str) -> Any:
    try:
        return catalog.get(name)
    except UnknownDatasetError:
        raise HTTPException(404, f"unknown dataset {name!r}") from None


def allowed_hosts(host: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` names a viewer bound to ``host`` answers to: loopback names for a
    loopback address, the address itself, and ``extra``."""
    names = [*LOOPBACK_HOSTS, *extra]
    if host not in ("0.0.0.0", "::", ""):
        names.append(host)
    return list(dict.fromkeys(names))


def create_app(
    bank: Bank | None = None,
    *,
    hosts: Sequence[str] = LOOPBACK_HOSTS,
    limits: Limits | None = None,
) -> Starlette:
    """The viewer's ASGI app over ``bank`` (default: the bank under CONVBANK_HOME),
    answering requests whose ``Host`` is one of ``hosts`` (``"*"`` for any)."""
    limits = limits or Limits()
    state = _State(bank or Bank(), limits)
    sandbox = SqlSandbox(state.bank.root, workers=limits.sql_workers, memory=parse_size(limits.query_memory))
    pages = _Workers("pages", limits.page_workers, limits.page_queue)
    queries = _Workers("sql", limits.sql_workers, limits.sql_queue)

    async def index(request: Request) -> Response:
        built = state.current().snapshot.built()
        rows = []
        for ds in catalog.catalog:
            entry = built.get(ds.name)
            counts = {
                f"{c}/{s}": info.conversations
                for c, cfg in (entry.configs.items() if entry else ())
                for s, info in cfg.splits.items()
            }
            rows.append({"ds": ds, "counts": counts, "total": sum(counts.values())})
        return _render("index.html", rows=rows)

    async def dataset(request: Request) -> Response:
        ds = _dataset(request.path_params["name"])
        gen = state.current()
        built = gen.snapshot.built().get(ds.name)
        if not built:
            return _render("dataset.html", ds=ds, built=False, status=200)
        args = {
            k: request.query_params.get(k, "")
            for k in ("config", "split", "label", "q", "field", "value", "min", "max", "sort", "order")
        }
        try:
            page = int(request.query_params.get("page", "1"))
        except ValueError:
            page = 1

        def work(job: _Job) -> dict[str, Any]:
            with gen.connection(job) as con:
                known = gen.cached("labels", ds.name, lambda: labels(con, ds.name))
                listing = list_conversations(con, ds.name, args, page, known)
                if not listing.filtered:
                    charts = gen.cached("stats", ds.name, lambda: _stats(ds.name, gen.snapshot))
                elif listing.total:  # the charts follow the filter
                    key = ("charts", ds.name, listing.where, *listing.params)
                    charts = gen.cached_lru(key, lambda: _charts(selection_stats(con, ds.name, listing)))
                else:
                    charts = None
                return {"listing": listing, "labels": known, "charts": charts}

        data = await pages.run(request, work, limits.query_seconds)
        return _render(
            "dataset.html",
            ds=ds,
            built=True,
            parts=[
                (c, s, i.conversations) for c, cfg in built.configs.items() for s, i in cfg.splits.items()
            ],
            args=args,
            fields=list(ds.viewer_filters),
            sorts=[*SORTS, *(f"meta:{f}" for f in ds.viewer_filters)],
            query=lambda **kw: _query({**args, **kw}),
            **data,
        )

    async def conversation(request: Request) -> Response:
        ds = _dataset(request.path_params["name"])
        cid = request.path_params["cid"]
        gen = state.current()
        as_json = request.query_params.get("format") == "json"

        def work(job: _Job) -> Response:
            start = time.perf_counter()
            try:
                corpus = gen.corpus(ds.name)
                corpus.snapshot.check(ds.name)  # the files as the manifest says (a stat each), cache or not
                conv = corpus[cid]
                before, after = corpus.neighbours(cid)
            except (ConversationNotFoundError, NotBuiltError) as exc:
                raise HTTPException(404, str(exc)) from None
            if as_json:
                return Response(_json.encode(conv.to_dict()), media_type="application/json")
            return _render(
                "conversation.html",
                ds=ds,
                conv=conv,
                turns=turn_views(conv, corpus.context(conv)),
                every_turn=constant_turn_meta(conv),
                before=before,
                after=after,
                pretty_json=msgspec.json.format(_json.encode(conv.to_dict()), indent=2).decode(),
                seconds=time.perf_counter() - start,
            )

        return await pages.run(request, work, None)

    async def sql_page(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        result: Result | None = None
        error = None
        if q:
            snapshot = state.current().snapshot

            def work(job: _Job) -> Result:
                return sandbox.run(
                    snapshot.generation,
                    q,
                    timeout=limits.query_seconds,
                    max_rows=SQL_ROWS,
                    cell_chars=SQL_CELL_CHARS,
                    stop=lambda: job.stopped is not None,
                )

            try:
                result = await queries.run(request, work, None)
            except (QueryError, NotBuiltError) as exc:
                error = str(exc)
        if q and result is not None and request.query_params.get("format") == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow([_spreadsheet_safe(c) for c in result.columns])
            writer.writerows([_spreadsheet_safe(v) for v in row] for row in result.rows)
            return Response(
                buf.getvalue(),
                media_type="text/csv; charset=utf-8",
                headers={"Content-Disposition": 'attachment; filename="convbank-query.csv"'},
            )
        return _render(
            "sql.html", q=q, result=result, error=error, examples=examples(), status=400 if error else 200
        )

    async def error_page(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            status, detail = exc.status_code, exc.detail
        elif isinstance(exc, (DamagedBankError, QueryError)):
            status, detail = 503, str(exc)
        elif isinstance(exc, NotBuiltError):
            status, detail = 404, str(exc)
        else:
            status, detail = 500, "internal error"
        response = _render("error.html", status=status, code=status, detail=detail)
        if status == 503:
            response.headers["Retry-After"] = "1"
        for key, value in SECURITY_HEADERS:  # a 500 is sent outside the middleware
            response.headers[key.decode()] = value.decode()
        return response

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            stop()

    def stop() -> None:
        """Stop every query now (the server is shutting down)."""
        sandbox.close()
        queries.shutdown()
        pages.shutdown()

    static = StaticFiles(directory=str(Path(__file__).parent / "static"))
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/datasets/{name}", dataset),
            Route("/datasets/{name}/conversations/{cid:path}", conversation),  # ids may hold "/"
            Route("/sql", sql_page),
            Mount("/static", static, name="static"),
        ],
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts)),
        ],
        exception_handlers={HTTPException: error_page, ConvbankError: error_page, Exception: error_page},
        lifespan=lifespan,
    )
    app.state.stop_queries = stop
    return app


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _spreadsheet_safe(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run: text that starts like a formula (``= + - @``,
    tab, CR) gets a leading single quote, as OWASP recommends against CSV injection."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _query(args: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return "?" + urlencode({k: v for k, v in args.items() if v not in ("", None)})


def _stats(name: str, snapshot: Snapshot) -> dict[str, Any]:
    """Charts of the dataset page: labels, turn lengths, key metadata (SVG, escaped)."""
    from convbank.stats import stats

    return _charts(stats([name], snapshot=snapshot)[name])


def _charts(data: dict[str, Any]) -> dict[str, Any]:
    from convbank.report import dataset_charts

    return dataset_charts(data)
