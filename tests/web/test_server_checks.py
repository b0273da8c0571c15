"""The viewer as a running server, attacked where no bound in seconds is at stake: requests from
other sites and with other Host headers, hostile SQL, a bank rebuilt or damaged while it
serves, errors. It must refuse what it should, never write the bank, and answer what it can.
(The load tests, with bounds in seconds, are in test_server_load.py, run alone.)"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from convbank.build import build
from convbank.cli import cli
from convbank.fetch import Fetcher
from convbank.store import Bank
from convbank.web import create_app
from testsupport import SHARED, bank_files
from viewer import Server

WAIT = 60
"""Seconds a request may take: beside other tests, the first query's worker took over httpx's
default of 5 s to start (3 of 13 tests, on a loaded machine)."""


@pytest.fixture(scope="module")
def server(built_home: Path) -> Iterator[Server]:
    """One server for the module's tests, none of which changes it; its time limit is far
    from anything they ask (they run beside other tests: a 2 s limit was passed, 3 of 8)."""
    srv = Server(built_home, "--query-timeout", "120")
    yield srv
    srv.stop()


def test_requests_from_other_sites_are_refused(server: Server) -> None:
    q = {"q": "SELECT 1 AS x"}
    for site, mode, dest in (("cross-site", "no-cors", "image"), ("same-site", "cors", "empty")):
        headers = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest}
        response = httpx.get(server.url + "/sql", params=q, headers=headers, timeout=WAIT)
        assert response.status_code == 403 and response.headers["x-content-type-options"] == "nosniff"
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert (
        httpx.get(server.url + "/", headers=link, timeout=WAIT).status_code == 200
    )  # following a link is fine
    assert (
        httpx.get(
            server.url + "/sql", params=q, headers={"Sec-Fetch-Site": "same-origin"}, timeout=WAIT
        ).status_code
        == 200
    )


def test_bad_query_memory_is_refused_at_start(built_home: Path) -> None:
    result = CliRunner().invoke(
        cli, ["serve", "--query-memory", "lots"], env={"CONVBANK_HOME": str(built_home)}
    )
    assert result.exit_code == 2 and "'lots' is not a size such as 512MB or 2GB" in result.output


def test_serve_prints_its_address_and_refuses_a_busy_port(server: Server, built_home: Path) -> None:
    assert server.banner == f"convbank viewer on {server.url}/ (Ctrl+C to stop)\n"
    result = CliRunner().invoke(cli, ["serve", "--port", str(server.port)])
    assert result.exit_code == 2
    assert result.output == f"error: 127.0.0.1:{server.port} is already in use; choose another with --port\n"


@pytest.mark.parametrize(
    ("host", "why"),
    [("256.1.1.1", "Name or service not known"), ("192.0.2.1", "Cannot assign requested address")],
)
def test_a_host_that_cannot_be_served_asks_for_another_host(built_home: Path, host: str, why: str) -> None:
    """Before: `--host 256.1.1.1` (no such address) and `--host 192.0.2.1` (not this
    machine's) said `choose another with --port`, the port being fine; 2 of 2."""
    result = CliRunner().invoke(cli, ["serve", "--host", host, "--port", "8000"])
    assert (result.exit_code, result.output) == (
        2,
        f"error: {host}:8000 cannot be used ({why}); choose another with --host\n",
    )


@pytest.mark.parametrize(
    ("host", "status"),
    [("127.0.0.1:{port}", 200), ("localhost:{port}", 200), ("evil.example", 400), ("10.0.0.1:{port}", 400)],
)
def test_host_header_is_checked(server: Server, host: str, status: int) -> None:
    response = httpx.get(
        server.url + "/sql",
        params={"q": "SELECT 1 AS x"},
        headers={"Host": host.format(port=server.port)},
        timeout=WAIT,
    )
    assert response.status_code == status
    assert response.headers["x-content-type-options"] == "nosniff"
    if status == 400:
        assert "<td>1</td>" not in response.text


def test_a_host_port_not_served_is_refused_by_the_server(server: Server) -> None:
    """Before: ``Host: 127.0.0.1:99999`` was answered 200 (Starlette checks the name only; 2
    of 2). The port served is the socket's: another port on a loopback name is refused."""
    other = server.port % 65535 + 1
    statuses = {
        host: httpx.get(server.url + "/", headers={"Host": host}, timeout=WAIT).status_code
        for host in (
            f"127.0.0.1:{server.port}",
            f"[::1]:{server.port}",
            "127.0.0.1:99999",
            f"localhost:{other}",
        )
    }
    assert list(statuses.values()) == [200, 200, 400, 400]


# ---------------------------------------------------------------------- hostile SQL, rebuilds
@pytest.fixture
def own_bank(tmp_path: Path) -> Bank:
    bank = Bank(tmp_path / "bank")
    fetcher = Fetcher(sources=[SHARED], verify=False, progress=False)
    build(["casino"], fetcher=fetcher, bank=bank)
    return bank


def test_hostile_sql_through_the_viewer(own_bank: Bank) -> None:
    client = TestClient(create_app(own_bank), base_url="http://127.0.0.1")
    with own_bank.snapshot() as snap:
        part = snap.ref("conversations", "casino", "default", "train").path
    before = bank_files(own_bank)
    for statement in (
        f"EXPLAIN ANALYZE COPY (SELECT * FROM conversations WHERE false) TO '{part}' (FORMAT parquet)",
        f"EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{own_bank.manifest_path}' (FORMAT csv)",
        f"EXPLAIN ANALYZE COPY (SELECT * FROM conversations) TO '{own_bank.root / 'conversations'}' "
        "(FORMAT parquet, PARTITION_BY (dataset, config, split), OVERWRITE_OR_IGNORE)",
        "EXPLAIN ANALYZE CREATE OR REPLACE VIEW turns AS SELECT 'defaced' AS text",
    ):
        response = client.get("/sql", params={"q": statement})
        assert response.status_code in (200, 400)
        assert bank_files(own_bank) == before, statement
        page = client.get("/sql", params={"q": "SELECT count(*) AS n FROM turns WHERE dataset = 'casino'"})
        assert "<td>14297</td>" in page.text
        assert "defaced" not in client.get("/datasets/casino/conversations/157").text
        listing = client.get("/datasets/casino?split=train").text
        assert re.search(r'id="count">900 conversations', listing)


def test_viewer_during_rebuilds(own_bank: Bank, tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.mkdir()
    for split in ("train", "valid", "test"):
        records = json.loads((SHARED / "casino" / f"casino_{split}.json").read_text(encoding="utf-8"))
        (short / f"casino_{split}.json").write_text(
            json.dumps(records[: len(records) // 2]), encoding="utf-8"
        )
    client = TestClient(create_app(own_bank), base_url="http://127.0.0.1")
    query = (
        "SELECT (SELECT count(*) FROM conversations WHERE dataset = 'casino') AS n, "
        "(SELECT count(*) FROM turns WHERE dataset = 'casino') AS t, "
        "(SELECT sum(num_turns) FROM conversations WHERE dataset = 'casino') AS s"
    )
    stop = threading.Event()
    problems: list[str] = []
    answers: set[str] = set()

    def reader() -> None:
        while not stop.is_set():
            response = client.get("/sql", params={"q": query, "format": "csv"})
            if response.status_code != 200:
                problems.append(f"{response.status_code}: {response.text[:200]}")
                continue
            n, t, s = response.text.splitlines()[1].split(",")
            if t != s or n not in ("1030", "515"):
                problems.append(f"torn: {response.text!r}")
            answers.add(n)
            page = client.get("/datasets/casino/conversations/157")
            if page.status_code not in (200, 404):
                problems.append(f"page {page.status_code}")

    readers = [threading.Thread(target=reader) for _ in range(4)]
    for t in readers:
        t.start()
    try:
        for i in range(6):
            build(
                ["casino"],
                fetcher=Fetcher(sources=[short if i % 2 == 0 else SHARED], verify=False, progress=False),
                bank=own_bank,
            )
    finally:
        stop.set()
        for t in readers:
            t.join(60)
    assert problems == []
    assert answers == {"1030", "515"}


def test_error_pages_carry_the_security_headers(built: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    import convbank.web.app as app_module

    def broken(*args: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(app_module, "turn_views", broken)
    client = TestClient(create_app(built), base_url="http://127.0.0.1", raise_server_exceptions=False)
    response = client.get("/datasets/casino/conversations/157")
    assert response.status_code == 500
    assert "boom" not in response.text and "internal error" in response.text
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.headers["x-content-type-options"] == "nosniff"
    for url in ("/nowhere", "/datasets/nope"):
        assert client.get(url).headers["x-content-type-options"] == "nosniff"


def test_damaged_bank_page_is_503(own_bank: Bank) -> None:
    client = TestClient(create_app(own_bank), base_url="http://127.0.0.1")
    assert client.get("/datasets/casino/conversations/157").status_code == 200
    with own_bank.snapshot() as snap:
        paths = [r.path for r in snap.refs("turns")]
    for path in paths:
        path.unlink()
    response = client.get("/datasets/casino/conversations/157")
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert re.search(r"the bank is damaged: \S+/turns/\S+ (is unreadable|is missing)", response.text)
    own_bank.manifest_path.write_text("{", encoding="utf-8")
    response = client.get("/datasets/casino")
    assert response.status_code == 503
    assert f"the bank is damaged: {own_bank.manifest_path} is not valid JSON" in response.text
