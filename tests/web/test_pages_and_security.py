"""The web viewer: every page and the security rules with Starlette's test client, then
end to end in headless Chromium (Debian's package) against a live server on loopback."""

from __future__ import annotations

import html
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.testclient import TestClient

from convbank.store import Bank
from convbank.web import create_app


def _count(html: str) -> int:
    (found,) = re.findall(r'id="count">([\d,]+) conversations', html)
    return int(found.replace(",", ""))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/", "CaSiNo: Campsite Negotiation Dialogues"),
        ("/datasets/casino", "1,030 conversations"),
        ("/datasets/convai2", "Dialogues between human evaluators"),
        ("/datasets/ccpe", "ENTITY_PREFERENCE"),
        ("/datasets/pec", "happy"),
        ("/datasets/curiosity", "dialog_act"),
        ("/datasets/casino/conversations/157", "Submit-Deal"),
        ("/datasets/convai2/conversations/volunteers-00001", "participant2"),
        ("/datasets/pec/conversations/happy-train-000000", "responder"),
        ("/sql", "SQL console"),
    ],
)
def test_pages(client: TestClient, url: str, expected: str) -> None:
    response = client.get(url)
    assert response.status_code == 200
    assert expected in response.text
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert "<script" not in response.text


def test_catalog_lists_every_dataset_with_counts(client: TestClient) -> None:
    html = client.get("/").text
    for name in ("casino", "ccpe", "curiosity", "pec", "convai2"):
        assert f'href="/datasets/{name}"' in html
    assert "1,030" in html and "CC-BY-4.0" in html


def test_listing_filters_sort_and_pages(client: TestClient) -> None:
    assert _count(client.get("/datasets/casino").text) == 1030
    assert _count(client.get("/datasets/casino?split=valid").text) == 30
    assert _count(client.get("/datasets/casino?label=strategy:uv-part").text) == 89
    html = client.get(
        "/datasets/casino?label=strategy:uv-part&field=satisfaction&value=Slightly+satisfied&q=water"
    ).text
    assert _count(html) == 52
    assert _count(client.get("/datasets/convai2?field=eval_score&value=5").text) == 86
    by_turns = client.get("/datasets/convai2?sort=turns&order=desc").text
    first = re.search(r'<td class="num">(\d+)</td>', by_turns.split('id="count"')[1])
    assert first and first.group(1) == "1000"
    page2 = client.get("/datasets/casino?page=2").text
    assert "page 2 of 21" in page2 and 'rel="prev"' in page2


@pytest.mark.parametrize(
    ("url", "notice"),
    [
        (
            "/datasets/casino?label=uv-part",
            "casino has no annotation layer 'uv-part' (a label is layer:label); did you mean "
            "strategy:uv-part? layers: strategy",
        ),
        (
            "/datasets/casino?label=strategy:uv_part",
            "casino has no label 'uv_part' in layer 'strategy'; did you",
        ),
        (
            "/datasets/convai2?label=strategy:uv-part",
            "convai2 has no annotation layer 'strategy' (a label is",
        ),
    ],
)
def test_a_label_typo_is_said_as_the_api_says_it(client: TestClient, url: str, notice: str) -> None:
    """Before: a notice without the closest label, below the charts' '0 conversations', and
    none for a dataset without annotations (convai2)."""
    page = client.get(url)
    assert page.status_code == 400 and _count(page.text) == 0
    (alert,) = re.findall(r'role="alert">([^<]*)</p>', page.text)
    assert html.unescape(alert).startswith(notice)
    assert page.text.index('role="alert"') < page.text.index("<h2>Distributions</h2>")  # seen first
    assert 'role="alert"' not in client.get("/datasets/casino?label=strategy:uv-part").text


CASINO_SORTS = "source, id, turns, split, meta:satisfaction, meta:opponent_likeness, meta:points_scored"


@pytest.mark.parametrize(
    ("url", "notice", "count"),
    [
        (
            "/datasets/casino?split=trian",
            "casino/default has no split 'trian'; did you mean train? known splits: train, valid, test",
            0,
        ),
        (
            "/datasets/casino?config=defualt",
            "casino has no config 'defualt'; did you mean default? known configs: default",
            0,
        ),
        (
            "/datasets/convai2?config=volunteers&split=valid",
            "convai2/volunteers has no split 'valid'; known splits: train",
            0,
        ),
        ("/datasets/casino?sort=nope", f"sort 'nope' is not one of {CASINO_SORTS}", 1030),
        ("/datasets/casino?sort=meta:nope", f"sort 'meta:nope' is not one of {CASINO_SORTS}", 1030),
        ("/datasets/casino?order=up", "order 'up' is not asc or desc", 1030),
        (
            "/datasets/casino?field=nope&value=1",
            "casino has no metadata field 'nope'; one of satisfaction",
            1030,
        ),
        ("/datasets/casino?field=points_scored&max=zz", "max 'zz' is not a number", 1030),
    ],
)
def test_a_filter_the_data_cannot_match_is_said_with_400(
    client: TestClient, url: str, notice: str, count: int
) -> None:
    """Before: an unknown split or config was silently an empty listing (HTTP 200, no alert),
    an unknown sort or order silently the default order, and every notice came with 200."""
    page = client.get(url)
    assert page.status_code == 400
    assert _count(page.text) == count
    (alert,) = re.findall(r'role="alert">([^<]*)</p>', page.text)
    assert html.unescape(alert).startswith(notice)
    assert page.text.index('role="alert"') < page.text.index("<h2>Distributions</h2>")


@pytest.mark.parametrize(
    ("url", "count"),
    [
        ("/datasets/casino?split=train", 900),
        ("/datasets/casino?config=default&split=test", 100),
        ("/datasets/casino?sort=meta:points_scored&order=desc", 1030),
        ("/datasets/casino?sort=source&order=asc", 1030),
    ],
)
def test_filters_the_data_can_match_answer_200(client: TestClient, url: str, count: int) -> None:
    page = client.get(url)
    assert page.status_code == 200 and _count(page.text) == count
    assert 'role="alert"' not in page.text


def test_a_union_config_lists_its_parts(client: TestClient) -> None:
    """PEC's ``all`` stands for its domains, as in ``load("pec", config="all")`` (before: 0)."""
    page = client.get("/datasets/pec?config=all")
    assert page.status_code == 200 and _count(page.text) == _count(client.get("/datasets/pec").text) > 0


def test_hostile_filter_values_are_shown_escaped(client: TestClient) -> None:
    for key in ("split", "config", "sort", "order", "label", "field"):
        page = client.get("/datasets/casino", params={key: "<script>alert(1)</script>"})
        assert page.status_code == 400, key
        assert "<script" not in page.text, key
        (alert,) = re.findall(r'role="alert">([^<]*)</p>', page.text)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in alert, key


def test_listing_shows_text_and_metadata_and_explains(client: TestClient) -> None:
    first = client.get("/datasets/casino").text.split('id="count"')[1]
    rows = re.findall(r'<tr><td><a href="[^"]+">([^<]+)</a></td><td>([^<]+)</td>', first)
    assert rows[0] == ("938", "default / train")  # source order: train first, not test
    assert "Hello!, how are you doing?<br>" in first
    assert "points_scored: 22 / 19" in first and "{}" not in first
    ranged = client.get("/datasets/casino?field=points_scored&min=30&sort=meta:points_scored&order=desc").text
    assert _count(ranged) == 3
    assert re.findall(r'/conversations/(\d+)"', ranged.split('id="count"')[1])[0] == "205"  # 32 points
    high = client.get("/datasets/convai2?field=eval_score&min=4&max=5").text
    assert _count(high) == _count(client.get("/datasets/convai2?field=eval_score&value=4").text) + 86
    unknown = client.get("/datasets/casino?label=strategy:nope")
    assert unknown.status_code == 400 and _count(unknown.text) == 0
    assert (
        "casino has no label &#39;nope&#39; in layer &#39;strategy&#39;; did you mean strategy:no-need? "
        in unknown.text
    )
    bad = client.get("/datasets/convai2?field=eval_score&min=abc")
    assert bad.status_code == 400 and "min &#39;abc&#39; is not a number" in bad.text
    convai2 = client.get("/datasets/convai2/conversations/volunteers-00003").text
    assert convai2.count("sender_class: Human") == 1  # once beside the participant, not per turn
    assert '<p class="muted">on every turn: <span class="tag">sender_class: Human</span></p>' in convai2


def test_conversation_page_shows_annotations(client: TestClient) -> None:
    casino = client.get("/datasets/casino/conversations/157").text
    assert 'class="deal"' in casino and "mturk_agent_1 gets" in casino
    assert '<span class="tag " data-layer="strategy">small-talk</span>' in casino
    assert "points_scored: 17" in casino
    assert "personality</b>: svo: " in casino and "big-five: (extraversion: " in casino  # not a dict repr
    assert (
        'href="/datasets/casino/conversations/747"' in casino
        and 'href="/datasets/casino/conversations/431"' in casino
    )
    ccpe = client.get("/datasets/ccpe/conversations/CCPE-8e113").text
    assert (
        '<mark title="ENTITY_NAME / MOVIE_GENRE_OR_CATEGORY; ENTITY_PREFERENCE / MOVIE_GENRE_OR_CATEGORY" data-labels="ENTITY_NAME ENTITY_PREFERENCE">comedies</mark>'
        in ccpe
    )
    assert "&lt;b&gt;ever&lt;/b&gt;" in ccpe
    curiosity = client.get("/datasets/curiosity/conversations/21922").text
    assert "♥ liked" in curiosity and "inform_response" in curiosity
    assert "used [77870, section]" in curiosity
    data = client.get("/datasets/casino/conversations/157?format=json").json()
    assert data["conversation_id"] == "157" and data["num_turns"] == 12


def test_dataset_text_is_escaped(client: TestClient) -> None:
    html = client.get("/datasets/curiosity/conversations/300").text
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in html
    assert "<script>" not in html and "<img src=x" not in html
    sql = client.get("/sql", params={"q": "SELECT text FROM turns WHERE text LIKE '%<script>%'"}).text
    assert "&lt;script&gt;" in sql and "<script>" not in sql


@pytest.mark.parametrize(
    "homepage",
    [
        "javascript:alert(1)",
        " JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<script>x</script>",
    ],
)
def test_a_homepage_that_is_not_http_is_text_not_a_link(tmp_path: Path, homepage: str) -> None:
    """A card's homepage is data (an import's ``--homepage``, a plugin's card). Before: the
    viewer's dataset page and ``report`` (whose file has no Content-Security-Policy and
    promises no scripts) linked ``<a href="javascript:alert(1)">`` (4 of 4 homepages); now
    only an ``http(s)`` address is a link, anything else is shown as text."""
    from click.testing import CliRunner

    from convbank.cli import cli

    chats = tmp_path / "chats.jsonl"
    chats.write_text('{"id": "c1", "messages": [{"role": "user", "content": "hi"}]}\n')
    runner = CliRunner()
    assert runner.invoke(cli, ["import", str(chats), "--name", "mine", "--homepage", homepage]).exit_code == 0
    assert runner.invoke(cli, ["report", "mine", "-o", str(tmp_path / "r.html")]).exit_code == 0
    shown = html.escape(homepage)
    page = TestClient(create_app(Bank()), base_url="http://127.0.0.1").get("/datasets/mine").text
    report = (tmp_path / "r.html").read_text()
    lines = [next(line for line in text.splitlines() if "Licence" in line) for text in (page, report)]
    assert lines == [
        f'<p class="muted">Licence unknown · {shown} · version imported</p>',
        f'<p class="meta">Licence unknown · {shown}</p>',
    ]


@pytest.mark.parametrize(
    "url",
    [
        "/datasets/nope",
        "/datasets/..%2F..%2Fetc%2Fpasswd",
        "/datasets/casino/conversations/nope",
        "/datasets/casino/conversations/..%2F..%2Fmanifest.json",
        "/static/..%2F..%2F..%2Fmanifest.json",
        "/static/../../errors.py",
        "/nowhere",
    ],
)
def test_unknown_and_traversal_answer_404(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404
    assert "root:" not in response.text and "ConvbankError" not in response.text


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("DROP VIEW turns", "only read-only statements"),
        ("CREATE TABLE x AS SELECT 1", "only read-only statements"),
        ("COPY turns TO '/tmp/x.csv'", "only read-only statements"),
        ("SELECT * FROM read_csv('/etc/passwd')", "SQL error"),
        ("SET enable_external_access = true", "only read-only statements"),
    ],
)
def test_sql_refuses_writes_and_files(client: TestClient, query: str, message: str) -> None:
    response = client.get("/sql", params={"q": query})
    assert response.status_code == 400
    assert message in response.text
    assert "root:x" not in response.text


def test_sql_console_and_csv(client: TestClient) -> None:
    html = client.get(
        "/sql", params={"q": "SELECT dataset, count(*) AS n FROM conversations GROUP BY 1 ORDER BY 1"}
    ).text
    assert "<td>casino</td><td>1030</td>" in html
    csv_text = client.get("/sql", params={"q": "SELECT 1 AS a, 'x' AS b", "format": "csv"})
    assert csv_text.text == "a,b\n1,x\n"
    assert csv_text.headers["content-disposition"] == 'attachment; filename="convbank-query.csv"'
    assert csv_text.headers["x-convbank-rows-shown"] == "1"
    assert "x-convbank-truncated" not in csv_text.headers
    assert 'href="/sql?q=SELECT' in client.get("/sql").text


# ---------------------------------------------------------------------- headless Chromium
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def server(built: Bank) -> Iterator[str]:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(create_app(built), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


def chromium(*args: str) -> str:
    assert CHROMIUM
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_browser_catalog_filter_conversation(server: str, tmp_path: Path) -> None:
    catalog = chromium("--dump-dom", f"{server}/")
    assert 'href="/datasets/casino"' in catalog and "<title>Datasets · convbank</title>" in catalog

    filtered = chromium("--dump-dom", f"{server}/datasets/casino?label=strategy%3Auv-part&split=train")
    assert _count(filtered) == 81
    assert 'value="strategy:uv-part" selected' in filtered

    ccpe = chromium("--dump-dom", f"{server}/datasets/ccpe/conversations/CCPE-8e113")
    marks = re.findall(r'<mark title="[^"]*" data-labels="([^"]*)">([^<]*)</mark>', ccpe)
    assert ("ENTITY_NAME ENTITY_PREFERENCE", "comedies") in marks and len(marks) == 4

    hostile = chromium("--dump-dom", f"{server}/datasets/curiosity/conversations/300")
    assert "<title>curiosity 300 · convbank</title>" in hostile  # the injected script did not run
    assert "pwned</title>" not in hostile and "<script" not in hostile.split("</head>")[1]
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in hostile

    for name, url in (
        ("catalog", "/"),
        ("casino-filtered", "/datasets/casino?label=strategy%3Auv-part"),
        ("casino-157", "/datasets/casino/conversations/157"),
        ("ccpe-spans", "/datasets/ccpe/conversations/CCPE-8e113"),
        ("curiosity-hostile", "/datasets/curiosity/conversations/300"),
        ("sql", "/sql?q=SELECT+dataset%2C+count(*)+FROM+conversations+GROUP+BY+1"),
    ):
        shot = tmp_path / f"{name}.png"
        chromium(f"--screenshot={shot}", "--window-size=1280,1400", f"{server}{url}")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    keep = os.environ.get("CONVBANK_SCREENSHOTS")
    if keep:
        shutil.copytree(tmp_path, keep, dirs_exist_ok=True)


def test_browser_on_convbank_serve(built_home: Path) -> None:
    """`convbank serve` as a user starts it: its printed address opens in Chromium, and the
    listing's snippets, ranges, metadata sort and notices are there."""
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    from viewer import Server

    srv = Server(built_home)
    try:
        assert srv.banner == f"convbank viewer on {srv.url}/ (Ctrl+C to stop)\n"
        url = srv.banner.split(" on ", 1)[1].split(" ", 1)[0]
        ranged = chromium(
            "--dump-dom",
            f"{url}datasets/casino?field=points_scored&min=30&sort=meta%3Apoints_scored&order=desc",
        )
        assert _count(ranged) == 3
        assert "points_scored: 5 / 32" in ranged and "Hello my friend how are you" in ranged
        notice = chromium("--dump-dom", f"{url}datasets/casino?label=strategy%3Anope")
        assert 'role="alert">casino has no label' in notice
    finally:
        assert srv.stop() == 0


def test_sql_csv_download_says_it_holds_the_first_1000_rows(client: TestClient) -> None:
    """Before: ``convbank-query.csv`` with 1,000 rows of 33,236 and nothing saying so."""
    cut = client.get("/sql", params={"q": "SELECT * FROM turns", "format": "csv"})
    assert cut.status_code == 200
    assert cut.text.count("\n") == 1001  # the header and 1,000 rows
    assert cut.headers["content-disposition"] == 'attachment; filename="convbank-query-first-1000-rows.csv"'
    assert cut.headers["x-convbank-rows-shown"] == "1000"
    assert cut.headers["x-convbank-truncated"] == "1,000 of at least 1,001 rows"
    whole = client.get("/sql", params={"q": "SELECT * FROM range(1000)", "format": "csv"})
    assert whole.text.count("\n") == 1001 and "x-convbank-truncated" not in whole.headers
    assert whole.headers["content-disposition"] == 'attachment; filename="convbank-query.csv"'
    page = client.get("/sql", params={"q": "SELECT * FROM turns"}).text
    assert "1,000 rows (more not shown)" in page
    assert '&amp;format=csv">download CSV (first 1,000 rows)</a>' in page
    small = client.get("/sql", params={"q": "SELECT * FROM range(1000)"}).text
    assert "1,000 rows ·" in small and '&amp;format=csv">download CSV</a>' in small


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1", 200),
        ("127.0.0.1:80", 200),
        ("localhost:80", 200),
        ("viewer.example:8443", 200),
        ("127.0.0.1:99999", 400),
        ("127.0.0.1:0", 400),
        ("127.0.0.1:81", 400),
        ("localhost:8443", 400),
        ("[::1]:81", 400),
        ("127.0.0.1:+80", 400),
        ("viewer.example:65536", 400),
        ("viewer.example:x", 400),
    ],
)
def test_a_host_port_not_served_is_refused(built: Bank, host: str, status: int) -> None:
    """Before: Starlette checked the Host's name only (``127.0.0.1:99999`` answered 200, 1 of
    1 each). A loopback name or an address must carry the port served (80 here, the test
    client's); a name given with --allow-host may carry any port in 1..65535 (a proxy's)."""
    client = TestClient(create_app(built, hosts=["127.0.0.1", "localhost", "[::1]", "viewer.example"]))
    response = client.get("/", headers={"Host": host})
    assert (response.status_code, response.headers["x-content-type-options"]) == (status, "nosniff")
    assert ("Invalid host header" in response.text) is (status == 400)
