"""Routes of the viewer. Every page is rendered server-side with autoescaping; the pages
carry no scripts and a Content-Security-Policy that forbids them."""

from __future__ import annotations

import csv
import io
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from convbank import __version__, catalog
from convbank.build import bank_root
from convbank.errors import ConversationNotFoundError, NotBuiltError, QueryError, UnknownDatasetError
from convbank.query import Corpus
from convbank.store import Bank, connect, is_read_only
from convbank.web.data import FILTERS, SORTS, labels, list_conversations, turn_views

__all__ = ["create_app"]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
SQL_ROWS = 1000
EXAMPLES = (
    (
        "Conversations per dataset and split",
        "SELECT dataset, config, split, count(*) AS conversations FROM conversations "
        "GROUP BY ALL ORDER BY ALL",
    ),
    (
        "CaSiNo strategy labels",
        "SELECT label, count(*) AS n FROM annotations WHERE dataset = 'casino' "
        "GROUP BY label ORDER BY n DESC",
    ),
    (
        "ConvAI2 rating by bot",
        "SELECT p.meta->>'user_id' AS bot, count(*) AS n, avg((c.meta->>'eval_score')::INT) AS mean_score "
        "FROM conversations c JOIN participants p USING (dataset, config, split, conversation_id) "
        "WHERE c.dataset = 'convai2' AND p.participant_id = 'participant2' "
        "AND c.meta->>'eval_score' IS NOT NULL GROUP BY ALL ORDER BY mean_score DESC",
    ),
    (
        "Longest turns",
        "SELECT dataset, conversation_id, turn_index, length(text) AS chars FROM turns "
        "ORDER BY chars DESC LIMIT 20",
    ),
)

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("convbank.web", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
_json = msgspec.json.Encoder()


class _Headers(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response


class _State:
    """The bank, one DuckDB connection (a cursor per request) and cached per-dataset data,
    refreshed when the bank's manifest changes."""

    def __init__(self, bank: Bank) -> None:
        self.bank = bank
        self._lock = threading.RLock()
        self._stamp: float | None = None
        self._con: duckdb.DuckDBPyConnection | None = None
        self._cache: dict[tuple[str, str], Any] = {}

    def _fresh(self) -> None:
        path = self.bank.manifest_path
        stamp = path.stat().st_mtime if path.exists() else None
        if stamp != self._stamp:
            if self._con is not None:
                self._con.close()
            self._con, self._cache, self._stamp = None, {}, stamp

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor on the shared connection (raises NotBuiltError on an empty bank)."""
        with self._lock:
            self._fresh()
            if self._con is None:
                self._con = connect(self.bank)
            return self._con.cursor()

    def cached(self, kind: str, name: str, make: Any) -> Any:
        """``make()`` once per bank version."""
        with self._lock:
            self._fresh()
            key = (kind, name)
            if key not in self._cache:
                self._cache[key] = make()
            return self._cache[key]


def _render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(template).render(version=__version__, **context)
    return HTMLResponse(html, status_code=status)


def _dataset(name: str) -> Any:
    try:
        return catalog.get(name)
    except UnknownDatasetError:
        raise HTTPException(404, f"unknown dataset {name!r}") from None


def create_app(bank: Bank | None = None) -> Starlette:
    """The viewer's ASGI app over ``bank`` (default: the bank under CONVBANK_HOME)."""
    state = _State(bank or Bank(bank_root()))

    def index(request: Request) -> Response:
        built = state.bank.built()
        rows = []
        for ds in catalog.catalog:
            counts = {
                f"{c}/{s}": info["conversations"]
                for c, cfg in built.get(ds.name, {}).get("configs", {}).items()
                for s, info in cfg.get("splits", {}).items()
            }
            rows.append({"ds": ds, "counts": counts, "total": sum(counts.values())})
        return _render("index.html", rows=rows)

    def dataset(request: Request) -> Response:
        ds = _dataset(request.path_params["name"])
        built = state.bank.built().get(ds.name)
        if not built:
            return _render("dataset.html", ds=ds, built=False, status=200)
        args = {
            k: request.query_params.get(k, "")
            for k in ("config", "split", "label", "q", "field", "value", "sort", "order")
        }
        try:
            page = int(request.query_params.get("page", "1"))
        except ValueError:
            page = 1
        listing = list_conversations(state.cursor(), ds.name, args, page)
        numbers = state.cached("stats", ds.name, lambda: _stats(ds.name, state.bank))
        return _render(
            "dataset.html",
            ds=ds,
            built=True,
            parts=[
                (c, s, i["conversations"])
                for c, cfg in built["configs"].items()
                for s, i in cfg["splits"].items()
            ],
            listing=listing,
            args=args,
            labels=state.cached("labels", ds.name, lambda: labels(state.cursor(), ds.name)),
            fields=list(FILTERS.get(ds.name, {})),
            sorts=list(SORTS),
            charts=numbers,
            query=lambda **kw: _query({**args, **kw}),
        )

    def conversation(request: Request) -> Response:
        ds = _dataset(request.path_params["name"])
        cid = request.path_params["cid"]
        try:
            corpus = state.cached("corpus", ds.name, lambda: Corpus(ds.name, bank=state.bank))
            start = time.perf_counter()
            conv = corpus[cid]
            before, after = corpus.neighbours(cid)
        except (ConversationNotFoundError, NotBuiltError) as exc:
            raise HTTPException(404, str(exc)) from None
        if request.query_params.get("format") == "json":
            return Response(_json.encode(conv.to_dict()), media_type="application/json")
        facts = corpus.fact_texts(conv)
        return _render(
            "conversation.html",
            ds=ds,
            conv=conv,
            turns=turn_views(conv, facts),
            before=before,
            after=after,
            pretty_json=msgspec.json.format(_json.encode(conv.to_dict()), indent=2).decode(),
            seconds=time.perf_counter() - start,
        )

    def sql_page(request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        result: dict[str, Any] | None = None
        error = None
        if q:
            try:
                cur = state.cursor()
                is_read_only(cur, q)
                try:
                    cur.execute(q)
                    columns = [d[0] for d in cur.description or []]
                    rows = cur.fetchmany(SQL_ROWS + 1) if columns else []
                except duckdb.Error as exc:
                    raise QueryError(f"SQL error: {str(exc).splitlines()[0]}") from exc
                result = {"columns": columns, "rows": rows[:SQL_ROWS], "more": len(rows) > SQL_ROWS}
            except (QueryError, NotBuiltError) as exc:
                error = str(exc)
        if q and result is not None and request.query_params.get("format") == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(result["columns"])
            writer.writerows(result["rows"])
            return Response(
                buf.getvalue(),
                media_type="text/csv; charset=utf-8",
                headers={"Content-Disposition": 'attachment; filename="convbank-query.csv"'},
            )
        return _render(
            "sql.html", q=q, result=result, error=error, examples=EXAMPLES, status=400 if error else 200
        )

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return _render("error.html", status=status, code=status, detail=detail)

    static = StaticFiles(directory=str(Path(__file__).parent / "static"))
    return Starlette(
        routes=[
            Route("/", index),
            Route("/datasets/{name}", dataset),
            Route("/datasets/{name}/conversations/{cid}", conversation),
            Route("/sql", sql_page),
            Mount("/static", static, name="static"),
        ],
        middleware=[Middleware(_Headers)],
        exception_handlers={HTTPException: not_found},
    )


def _query(args: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    return "?" + urlencode({k: v for k, v in args.items() if v not in ("", None)})


def _stats(name: str, bank: Bank) -> dict[str, Any]:
    """Charts of the dataset page: labels, turn lengths, key metadata (SVG, escaped)."""
    from convbank.report import dataset_charts
    from convbank.stats import stats

    return dataset_charts(stats([name], bank=bank)[name])
