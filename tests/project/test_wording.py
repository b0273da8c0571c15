"""Messages built from a name or a type take the article of its sound: ``an engine``, ``an
int``, ``an annotations table`` (before: "a engine named 'x' is already registered", "it
is a int, not text", "names a annotations file", "turn 3: a assistant message is liked":
every message built as ``a {name}``)."""

from __future__ import annotations

import pytest

from convbank._names import name_problem
from convbank._wording import article
from convbank.errors import PluginError
from convbank.registry import Registry


def test_a_word_takes_the_article_of_its_sound() -> None:
    words = ["engine", "int", "annotations", "assistant", "odd", "8-d", "11-d", "hour"]
    assert [article(w) for w in words] == [f"an {w}" for w in words]
    words = ["dataset", "user", "UTF-16", "uint8", "unified", "euro", "one-line", "1-d", "NoneType"]
    assert [article(w) for w in words] == [f"a {w}" for w in words]


class _Named:
    name = "x"


def test_an_engine_registered_twice_is_an_engine_in_its_message() -> None:
    engines: Registry[_Named] = Registry("engine")
    engines.register(_Named(), origin="first")
    with pytest.raises(PluginError) as caught:
        engines.register(_Named(), origin="second")
    assert str(caught.value) == (
        "an engine named 'x' is already registered (from first); second registers another — uninstall one "
        "of them or rename it"
    )
    assert name_problem(5) == "it is an int, not text"
