"""Query strings a script or an attacker sends the viewer's listing: a bound that is not a
finite number (``nan``, ``inf``, ``1e400``) is said, 400, and filters nothing, as ``zz`` is
(before: ``min=nan`` answered 200 with no conversation and ``max=nan`` 200 with all, each
as if it had matched); pages out of range (negative, huge, 5,000 digits, ``NaN``) are
clamped to the listing's."""

from __future__ import annotations

import html
import re

import pytest
from starlette.testclient import TestClient

from convbank.store import Bank

BOUNDS = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400"]


def _count(text: str) -> int:
    found = re.search(r"([\d,]+) conversations?", text)
    assert found is not None
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("bound", ["min", "max"])
@pytest.mark.parametrize("value", BOUNDS)
def test_a_bound_that_is_not_a_finite_number_is_said_with_400(
    client: TestClient, bound: str, value: str
) -> None:
    page = client.get("/datasets/casino", params={"field": "points_scored", bound: value})
    assert page.status_code == 400, value
    (alert,) = re.findall(r'role="alert">([^<]*)</p>', page.text)
    assert html.unescape(alert).startswith(f"{bound} {value!r} is not a"), alert
    assert _count(page.text) == 1030  # the bound filters nothing, as the notice says


@pytest.mark.parametrize("value", ["-1", "0", "99999999999999999999999", "9" * 5000, "NaN", "1e3", ""])
def test_a_page_out_of_range_is_clamped(client: TestClient, value: str) -> None:
    page = client.get("/datasets/casino", params={"page": value})
    assert page.status_code == 200, value
    assert _count(page.text) == 1030


@pytest.mark.parametrize(("low", "high"), [(10, 5), (6, 8), (7, 7), (0, 40)])
def test_min_and_max_are_met_by_one_participant(client: TestClient, built: Bank, low: int, high: int) -> None:
    """Sixth round. Before: each bound was its own condition on any participant, so that
    `min=10&max=5` (an empty range) listed 3 CaSiNo dialogues, one negotiator having scored 10
    or more and the other 5 or less, and `min=6&max=8` listed those too. Now a dialogue is
    listed when one participant's value lies within both bounds."""
    from convbank import load

    with load("casino", bank=built) as corpus:
        expected = corpus.sql(
            "SELECT count(DISTINCT conversation_id) AS n FROM participants WHERE dataset = 'casino' AND TRY_CAST("
            f"json_extract_string(meta, '$.outcomes.points_scored') AS DOUBLE) BETWEEN {low} AND {high}"
        ).to_pylist()[0]["n"]
    page = client.get("/datasets/casino", params={"field": "points_scored", "min": low, "max": high})
    assert page.status_code == 200
    assert _count(page.text) == expected, (low, high)
