"""Routes of the viewer. Every page is rendered server-side with autoescaping; the pages
carry no scripts and a Content-Security-Policy that forbids them.

Under load: every page reads one pinned generation of the bank (a rebuild never shows half
a bank), blocking work runs on bounded thread pools off the event loop, SQL runs on a fresh
connection per query that can reach nothing but the bank's tables, within a time and a
memory limit, and is interrupted when the client goes away or the server stops. Requests
whose ``Host`` is not one the server answers to are refused (DNS rebinding).
"""

from __future__ import annotations

import io
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import msgspec
from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from convbank import catalog
from convbank._textio import CsvRows, base64_of_bytes, bidi_closed, json_bytes, link_url
from convbank._version import __version__
from convbank._wording import counted
from convbank.errors import (
    ConvbankError,
    ConversationNotFoundError,
    DamagedBankError,
    NotBuiltError,
    QueryError,
    UnknownDatasetError,
)
from convbank.store import Bank, Snapshot
from convbank.store.sandbox import Result, SqlSandbox, parse_size
from convbank.web._runtime import (
    SECURITY_HEADERS,
    Limits,
    _HostPort,
    _Job,
    _SecurityHeaders,
    _State,
    _Workers,
)
from convbank.web.data import (
    constant_turn_meta,
    labels,
    list_conversations,
    selection_stats,
    show_value,
    sorts,
    turn_views,
)

__all__ = ["LOOPBACK_HOSTS", "Limits", "create_app"]

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
"""The SQL console's generic examples; each dataset adds its own (:attr:`Presentation.sql_examples`)."""


def examples() -> list[tuple[str, str]]:
    """The SQL console's examples: the generic ones, then each dataset's."""
    return [
        *EXAMPLES[:1],
        *(e for ds in catalog.catalog for e in ds.presentation.sql_examples),
        *EXAMPLES[1:],
    ]


_env = jinja2.Environment(
    loader=jinja2.PackageLoader("convbank.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    finalize=bidi_closed,  # a value's bidi controls end with it
)
_env.filters["show"] = show_value
_env.filters["link_url"] = link_url  # a card's homepage is a link only if http(s)


def conversation_url(name: str, cid: str) -> str:
    """The viewer's address of conversation ``cid`` of dataset ``name``: its id as the path
    (a ``/`` kept), or ``?id=`` where a browser would rewrite that path (a segment ``.`` or
    ``..``, which it resolves however it is escaped)."""
    base = f"/datasets/{quote(name, safe='')}/conversations/"
    if any(part in (".", "..") for part in cid.split("/")):
        return f"{base}?id={quote(cid, safe='')}"
    return base + quote(cid, safe="/")


class _AnyText(Convertor[str]):
    """A path parameter that is any text: Starlette's ``path`` stops at a line break."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


_env.globals["conversation_url"] = conversation_url
register_url_convertor("text", _AnyText())


def _render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(template).render(version=__version__, **context)
    return HTMLResponse(html, status_code=status)


def _dataset(name: str) -> Any:
    try:
        return catalog.get(name)
    except UnknownDatasetError as exc:  # the closest datasets named, as everywhere
        raise HTTPException(404, str(exc)) from None


def allowed_hosts(host: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` names a viewer bound to ``host`` answers to: loopback names for a
    loopback address, the address itself, and ``extra``."""
    names = [*LOOPBACK_HOSTS, *extra]
    if host not in ("0.0.0.0", "::", ""):
        names.append(host)
    return list(dict.fromkeys(names))


@dataclass
class _Viewer:
    """What the handlers share: the bank's generations, the limits, the SQL sandbox and the
    thread pools of pages and queries (``app.state.viewer``)."""

    state: _State
    limits: Limits
    sandbox: SqlSandbox
    pages: _Workers
    queries: _Workers

    def stop(self) -> None:
        """Stop every query now (the server is shutting down)."""
        self.sandbox.close()
        self.queries.shutdown()
        self.pages.shutdown()


def _viewer(request: Request) -> _Viewer:
    viewer: _Viewer = request.app.state.viewer
    return viewer


def create_app(
    bank: Bank | None = None,
    *,
    hosts: Sequence[str] = LOOPBACK_HOSTS,
    limits: Limits | None = None,
) -> Starlette:
    """The viewer's ASGI app over ``bank`` (default: the bank under CONVBANK_HOME),
    answering requests whose ``Host`` is one of ``hosts`` (``"*"`` for any).

    Example: ``uvicorn.run(create_app(Bank(), limits=Limits(query_seconds=5)))``.
    """
    limits = limits or Limits()
    state = _State(bank or Bank(), limits)
    viewer = _Viewer(
        state,
        limits,
        SqlSandbox(state.bank.root, workers=limits.sql_workers, memory=parse_size(limits.query_memory)),
        _Workers("pages", limits.page_workers, limits.page_queue),
        _Workers("sql", limits.sql_workers, limits.sql_queue),
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            viewer.stop()

    static = StaticFiles(directory=str(Path(__file__).parent / "static"))
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/datasets/{name}", dataset),
            Route("/datasets/{name}/conversations/{cid:text}", conversation),  # ids hold "/", line breaks
            Route("/sql", sql_page),
            Mount("/static", static, name="static"),
        ],
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(_HostPort),  # Starlette's check of the name ignores the port
            Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts)),
        ],
        exception_handlers={HTTPException: error_page, ConvbankError: error_page, Exception: error_page},
        lifespan=lifespan,
    )
    app.state.viewer = viewer
    app.state.stop_queries = viewer.stop
    return app


async def index(request: Request) -> Response:
    """``/``: every dataset (:func:`convbank.catalog.listing`) with its conversations in
    the bank's current generation."""
    rows = catalog.listing(_viewer(request).state.current().snapshot.manifest)
    return _render("index.html", rows=rows)


async def dataset(request: Request) -> Response:
    """``/datasets/NAME``: a dataset's conversations, filtered, sorted and paged by the
    query's arguments, with the charts of what is shown."""
    viewer = _viewer(request)
    ds = _dataset(request.path_params["name"])
    gen = viewer.state.current()
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

    data = await viewer.pages.run(request, work, viewer.limits.query_seconds)
    return _render(
        "dataset.html",
        ds=ds,
        built=True,
        parts=[(c, s, i.conversations) for c, cfg in built.configs.items() for s, i in cfg.splits.items()],
        args=args,
        fields=list(ds.presentation.viewer_filters),
        sorts=sorts(ds),
        query=lambda **kw: _query({**args, **kw}),
        status=400 if data["listing"].notices else 200,  # the page, and a status scripts can tell
        **data,
    )


async def conversation(request: Request) -> Response:
    """``/datasets/NAME/conversations/ID``: one conversation in the viewer's layout, with its
    neighbours (``?format=json``: its unified JSON). ``/datasets/NAME/conversations/?id=ID``
    is the same page (:func:`conversation_url`)."""
    viewer = _viewer(request)
    ds = _dataset(request.path_params["name"])
    cid = request.path_params["cid"] or request.query_params.get("id", "")
    gen = viewer.state.current()
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
            return Response(json_bytes(conv.to_dict()), media_type="application/json")
        return _render(
            "conversation.html",
            ds=ds,
            conv=conv,
            turns=turn_views(conv, corpus.context(conv)),
            every_turn=constant_turn_meta(conv),
            before=before,
            after=after,
            pretty_json=msgspec.json.format(json_bytes(conv.to_dict()), indent=2).decode(),
            seconds=time.perf_counter() - start,
        )

    return await viewer.pages.run(request, work, None)


async def sql_page(request: Request) -> Response:
    """``/sql``: the SQL console; ``?q=`` runs a read-only query in the sandbox, within the
    limits (``&format=csv``: its first rows as a CSV download)."""
    viewer = _viewer(request)
    q = request.query_params.get("q", "").strip()
    result: Result | None = None
    error = None
    if q:
        snapshot = viewer.state.current().snapshot

        def work(job: _Job) -> Result:
            return viewer.sandbox.run(
                snapshot,
                q,
                timeout=viewer.limits.query_seconds,
                max_rows=SQL_ROWS,
                cell_chars=SQL_CELL_CHARS,
                stop=lambda: job.stopped is not None,
            )

        try:
            result = await viewer.queries.run(request, work, None)
        except (QueryError, NotBuiltError) as exc:
            error = str(exc)
    if q and result is not None and request.query_params.get("format") == "csv":
        return _csv(result)
    return _render(
        "sql.html",
        q=q,
        result=result,
        error=error,
        examples=examples(),
        max_rows=SQL_ROWS,
        status=400 if error else 200,
    )


async def error_page(request: Request, exc: Exception) -> Response:
    """Every error as a page: a 404 or 400 as raised, a damaged bank or a query over its
    limits 503 (retry in a second), anything else 500 without its details."""
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


def _csv(result: Result) -> Response:
    """The console's CSV download of ``result``: at most :data:`SQL_ROWS` rows, like the
    page; when the query had more, the file name and the ``X-Convbank-Truncated`` header say
    so (``convbank query --format csv`` writes every row)."""
    buf = io.StringIO()
    writer = CsvRows(buf, formulas=False)  # a spreadsheet opens it: no cell runs as a formula
    writer.writerow(result.columns)
    writer.writerows([base64_of_bytes(v) for v in row] for row in result.rows)  # bytes as JSON has them
    shown = len(result.rows)
    name = f"convbank-query-first-{shown}-rows.csv" if result.more else "convbank-query.csv"
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "X-Convbank-Rows-Shown": str(shown)}
    if result.more:
        headers["X-Convbank-Truncated"] = f"{shown:,} of at least {counted(shown + 1, 'row')}"
    return Response(buf.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


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
