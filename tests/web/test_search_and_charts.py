"""The viewer's text search and filtered charts (issue 24.12): a listing searched for a text
shows the turns that matched, the matches in ``<mark>`` around escaped pieces (hostile text in
the data or in the search term stays text), and the charts above it are drawn for what the
filter selects."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from convbank import sql
from convbank.web.data import highlight


def _rows(html: str) -> str:
    return html.split('id="count"')[1]


def test_search_shows_the_matching_turns_highlighted(client: TestClient) -> None:
    html = _rows(client.get("/datasets/casino", params={"q": "firewood", "split": "valid"}).text)
    first = re.search(r"<tr><td><a href=\"/datasets/casino/conversations/(\w+)\">.*?</tr>", html, re.S)
    assert first
    cid = first.group(1)
    (expected,) = (
        sql(
            "SELECT min(turn_index) FROM turns WHERE dataset = 'casino' AND split = 'valid' "
            f"AND conversation_id = '{cid}' AND text ILIKE '%firewood%'"
        )
        .column(0)
        .to_pylist()
    )
    row = first.group(0)
    assert f'href="/datasets/casino/conversations/{cid}#t{expected}">turn {expected}</a>' in row
    assert re.search(r"<mark>firewood</mark>", row, re.I)
    assert "<th>turns with “firewood” · key metadata</th>" in html


def test_search_counts_the_matching_turns_it_does_not_show(client: TestClient) -> None:
    counts = sql(
        "SELECT conversation_id, count(*) AS n FROM turns WHERE dataset = 'casino' AND split = 'valid' "
        "AND text ILIKE '%food%' GROUP BY ALL HAVING n > 3 ORDER BY n DESC LIMIT 1"
    ).to_pylist()
    (top,) = counts
    html = client.get("/datasets/casino", params={"q": "food", "split": "valid", "sort": "id"}).text
    row = re.search(rf'conversations/{top["conversation_id"]}">.*?</tr>', _rows(html), re.S)
    assert row and row.group(0).count("<mark>") >= 3
    assert f"{top['n'] - 3} more matching turns" in row.group(0)


def test_hostile_text_and_search_terms_stay_escaped(client: TestClient) -> None:
    html = client.get("/datasets/curiosity", params={"q": "<script>"}).text
    assert "<mark>&lt;script&gt;</mark>document.title=&#39;pwned&#39;&lt;/script&gt;" in html
    assert "<script" not in html
    term = "<img src=x onerror=alert(1)>"
    hostile = client.get("/datasets/casino", params={"q": term}).text
    assert "<img src=x" not in hostile and "&lt;img src=x onerror=alert(1)&gt;" in hostile
    assert 'id="count">0 conversations' in hostile


def test_charts_follow_the_filter(client: TestClient) -> None:
    whole = client.get("/datasets/casino").text
    valid = client.get("/datasets/casino", params={"split": "valid"}).text
    assert 'id="charts-of"' not in whole
    assert '<p class="muted" id="charts-of">of the 30 conversations the filter below selects</p>' in valid
    counts = sql(
        "SELECT label, count(*) AS n FROM annotations WHERE dataset = 'casino' AND split = 'valid' "
        "AND layer = 'strategy' GROUP BY ALL"
    ).to_pylist()
    assert len(counts) == 9  # the strategies used in the 30 valid dialogues
    for r in counts:
        assert f"<title>{r['label']}: {r['n']} (" in valid
    searched = client.get("/datasets/casino", params={"q": "firewood", "label": "strategy:uv-part"}).text
    (selected,) = re.findall(r'id="charts-of">of the ([\d,]+) conversations', searched)
    assert int(selected.replace(",", "")) == int(re.findall(r'id="count">([\d,]+) conv', searched)[0])
    again = client.get("/datasets/casino").text  # the connection's own views serve again after
    assert again.count("<svg") == whole.count("<svg") and 'id="count">1,030 conversations' in again


def test_highlight_cuts_around_the_match_and_marks_every_occurrence() -> None:
    assert highlight("I need water, and more Water", "water") == [
        ("I need ", False),
        ("water", True),
        (", and more ", False),
        ("Water", True),
    ]
    long = highlight("x" * 300 + "WATER" + "y" * 300, "water", width=25)
    assert long == [("…", False), ("x" * 10, False), ("WATER", True), ("y" * 10, False), ("…", False)]
    assert highlight("no match here", "zz") == [("no match here", False)]
