"""A value's bidi controls end with it in every HTML convbank writes (the viewer's pages, a
report, a notebook's view): an imported dataset's title, licence, homepage, meta key or text
holding U+202E (RIGHT-TO-LEFT OVERRIDE) or U+2067 (RIGHT-TO-LEFT ISOLATE) left open would
turn around the rest of its line, the licence after a title, the meta after a key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import convbank
from convbank._textio import bidi_closed
from convbank.cli import cli
from convbank.store import Bank
from convbank.web import create_app

RLO, RLI = "\u202e", "\u2067"


def _open_text_nodes(html: str) -> list[str]:
    """The text between tags that leaves a bidi control open."""
    return [node for node in re.split(r"<[^>]*>", html) if bidi_closed(node) != node]


def test_every_html_page_closes_the_bidi_controls_of_each_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    chats = tmp_path / "chats.jsonl"
    line = {
        "id": "c1",
        "messages": [
            {"role": "user", "content": f"hi {RLO}olleh"},
            {"role": f"bot{RLI}x", "content": "fine"},
        ],
        "meta": {f"k{RLO}ey": f"v{RLI}al", "after": "shown as written"},
    }
    chats.write_text(json.dumps(line) + "\n")
    card = ["--title", f"T{RLO}itle", "--license", f"L{RLO}ic", "--homepage", f"not a link {RLI}x"]
    runner = CliRunner()
    assert runner.invoke(cli, ["import", str(chats), "--name", "mine", *card]).exit_code == 0
    assert runner.invoke(cli, ["report", "mine", "-o", str(tmp_path / "r.html")]).exit_code == 0
    client = TestClient(create_app(Bank()), base_url="http://127.0.0.1")
    listing = client.get("/datasets/mine").text
    conversation = re.search(r'href="(/datasets/mine/conversations/[^"]+)"', listing)
    assert conversation is not None
    corpus = convbank.load("mine")
    pages = {
        "catalog": client.get("/").text,
        "dataset": listing,
        "conversation": client.get(conversation.group(1)).text,
        "report": (tmp_path / "r.html").read_text(),
        "notebook corpus": corpus._repr_html_(),
        "notebook conversation": corpus[0]._repr_html_(),
    }
    for name, html in sorted(pages.items()):
        assert RLO in html or RLI in html, name  # the values are there, as written
        assert _open_text_nodes(html) == [], name  # before: 6 of 6 pages, 2-5 nodes each


def test_bidi_closed_closes_what_is_open_and_only_that() -> None:
    assert bidi_closed(f"a{RLO}b") == f"a{RLO}b\u202c"
    assert bidi_closed(f"a{RLO}b\u202c") == f"a{RLO}b\u202c"
    assert bidi_closed(f"{RLI}x{RLO}y") == f"{RLI}x{RLO}y\u202c\u2069"
    assert bidi_closed(f"{RLI}x{RLO}y\u2069z") == f"{RLI}x{RLO}y\u2069z"
    assert bidi_closed("שלום hello") == "שלום hello"  # right-to-left text needs no control
    assert bidi_closed(3) == 3
