"""The viewer's tests share its app over the session's built bank, through Starlette's test
client (the tests of a running server start their own: ``from viewer import Server``)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from convbank.store import Bank
from convbank.web import create_app


@pytest.fixture
def client(built: Bank) -> TestClient:
    """The viewer's app over the shared built bank, as a browser on this machine reaches it."""
    return TestClient(create_app(built), base_url="http://127.0.0.1")
