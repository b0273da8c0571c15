"""Issue 34.2: a Corpus in a notebook (``_repr_html_``): its dataset, parts and sizes, label
layers with their counts and first conversations, escaped, reading only what it shows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import convbank
from convbank.build import build
from convbank.fetch import Fetcher
from convbank.store import Bank
from convbank.store.snapshot import Snapshot
from testsupport import FIXTURES


def _cells(html: str, header: str) -> list[list[str]]:
    """The rows of the table whose first header cell is ``header``."""
    table = html.split(f"<tr><th>{header}</th>", 1)[1].split("</table>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in table.split("<tr>")[1:]]


def test_a_corpus_shows_its_parts_labels_and_first_conversations(
    casino_home: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = convbank.load("casino")
    reads: list[tuple[str, Any]] = []
    whole = Snapshot.read_table

    def noted(self: Snapshot, ref: Any, **options: Any) -> Any:
        reads.append((ref.table, options.get("columns")))
        return whole(self, ref, **options)

    monkeypatch.setattr(Snapshot, "read_table", noted)
    html = corpus._repr_html_()
    assert reads == [("annotations", ["layer", "label"])] * 3  # one file a split, two columns
    assert "<b>CaSiNo: Campsite Negotiation Dialogues</b>" in html and "1,030 conversations</p>" in html
    assert _cells(html, "config") == [
        ["default", "train", "900"],
        ["default", "valid", "30"],
        ["default", "test", "100"],
    ]
    assert _cells(html, "layer") == [["strategy", "5,858", "10"]]
    first = _cells(html, "conversation")
    assert [row[:3] for row in first] == [
        ["938", "default/train", "13"],
        ["404", "default/train", "13"],
        ["790", "default/train", "12"],
        ["607", "default/train", "12"],
        ["727", "default/train", "12"],
    ]
    assert first[0][3] == "Hello!, how are you doing?"
    assert first[4][3].endswith("…") and len(first[4][3]) == 160  # a long first turn is cut
    assert "<script" not in html


def test_a_selection_counts_its_own_conversations(casino_home: Bank) -> None:
    chosen = convbank.load("casino").filter(label="strategy:uv-part")
    html = chosen._repr_html_()
    assert "89 conversations (a selection)</p>" in html
    assert _cells(html, "config") == [["default", "train", "81"], ["default", "test", "8"]]
    ids = set(chosen.conversation_ids())
    annotations = convbank.load("casino").to_arrow("annotations").to_pylist()
    strategy = [a for a in annotations if a["conversation_id"] in ids]
    assert _cells(html, "layer") == [
        ["strategy", f"{len(strategy):,}", str(len({a["label"] for a in strategy}))]
    ]


@pytest.mark.parametrize(
    "empty",
    [lambda c: c.select([]), lambda c: c.filter(lambda conv: False), lambda c: c[5:5]],
    ids=["select", "filter", "slice"],
)
def test_a_corpus_of_no_conversations_says_so(casino_home: Bank, empty: Any) -> None:
    """A selection of nothing reads as one (before: ``repr`` ended ``in >`` and the page
    showed an empty parts table and "first 0 conversations" over an empty table, 3 of 3
    ways)."""
    none = empty(convbank.load("casino"))
    assert repr(none) == "<Corpus casino: 0 conversations (selected from 1,030)>"
    html = none._repr_html_()
    assert "0 conversations (a selection)</p>" in html and '<p class="muted">no conversations</p>' in html
    assert "<th>config</th>" not in html and "first 0" not in html and "<th>conversation</th>" not in html


def test_dataset_text_is_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = json.loads((FIXTURES / "ccpe" / "data.json").read_text(encoding="utf-8"))
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)> & co'
    records[0]["conversationId"] = "CCPE-<b>bold</b>"
    records[0]["utterances"][0]["text"] = hostile
    source = tmp_path / "src" / "ccpe"
    source.mkdir(parents=True)
    (source / "data.json").write_text(json.dumps(records), encoding="utf-8")
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    bank = Bank(tmp_path / "home" / "bank")
    build(["ccpe"], fetcher=Fetcher(sources=[source.parent], verify=False, progress=False), bank=bank)
    html = convbank.load("ccpe")._repr_html_()
    assert "<script" not in html and "<img" not in html and "<b>bold" not in html
    assert (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; co" in html
    )
    assert "<td>CCPE-&lt;b&gt;bold&lt;/b&gt;</td>" in html


def test_the_notebook_views_load_on_first_display_with_nothing_installed_at_import(
    casino_home: Bank,
) -> None:
    """No hook set by ``import convbank``: the viewer's layout is imported by the first
    ``_repr_html_`` itself (the upward imports pyproject's contracts name)."""
    script = (
        "import sys, convbank\n"
        "corpus = convbank.load('casino', split='valid')\n"
        "before = 'convbank.web.notebook' in sys.modules\n"
        "shown = corpus._repr_html_(), next(iter(corpus))._repr_html_()\n"
        "print(before, 'convbank.web.notebook' in sys.modules, *(h[:4] for h in shown))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.stdout.split() == ["False", "True", "<div", "<div"], done.stderr[-2000:]
