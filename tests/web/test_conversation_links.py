"""Every conversation's link in the viewer leads to it, whatever its id holds: a browser
resolves the segments ``.`` and ``..`` of a path (escaped as ``%2e`` too) before it asks, and
Starlette's ``path`` parameter stops at a line break."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from urllib.parse import urljoin

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from convbank.cli import cli
from convbank.store import Bank
from convbank.web import create_app

IDS = ["..", ".", "a\nb", "x/../y", "../../etc/passwd", "r/./1", "a/b?c#d&e=f", "r/001", "c\r\nd"]


def test_every_conversations_link_leads_to_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    chats = tmp_path / "chats.jsonl"
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    chats.write_text("".join(json.dumps({"id": cid, "messages": turns}) + "\n" for cid in IDS))
    assert CliRunner().invoke(cli, ["import", str(chats), "--name", "mine"]).exit_code == 0
    client = TestClient(create_app(Bank()), base_url="http://127.0.0.1")
    base = "http://127.0.0.1/datasets/mine"
    hrefs = re.findall(
        r'<td><a href="(/datasets/mine/conversations/[^"]+)">', client.get("/datasets/mine").text
    )
    reached = []
    for href in hrefs:
        url = urljoin(base, html.unescape(href))  # as a browser resolves it
        page = client.get(url + ("&" if "?" in url else "?") + "format=json")
        assert page.status_code == 200, (href, url)
        reached.append(page.json()["conversation_id"])
    assert sorted(reached) == sorted(IDS)
    neighbours = client.get("/datasets/mine/conversations/?id=..").text
    for href in re.findall(r'<a href="([^"]+)" accesskey="[pn]"', neighbours):
        assert client.get(urljoin(base, html.unescape(href))).status_code == 200, href
