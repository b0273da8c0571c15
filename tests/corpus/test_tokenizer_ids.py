"""A callable tokenizer's ids are ints (NumPy's too), never a bool, and what it returned that
is not ids is named: ``a list holding float``. Before: ``[True]`` was token id 1, silently,
and ``[1.5]`` was refused as "the tokenizer returned list", the list it was asked for."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import convbank
from convbank.examples._tokenize import TokenizerError


@pytest.fixture
def turns(tmp_path: Path) -> Any:
    path = tmp_path / "chats.jsonl"
    path.write_text(
        json.dumps({"id": "c", "messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8"
    )
    convbank.import_conversations(path, name="chats")
    return convbank.load("chats").examples("turns")


@pytest.mark.parametrize(
    ("tokenizer", "returned"),
    [
        (lambda t: [True], "a list holding bool"),
        (lambda t: [1.5], "a list holding float"),
        (lambda t: "ab", "str"),
        (lambda t: [2**70], "a list holding 1180591620717411303424, not an id from 0 to 2**63 - 1"),
        (lambda t: [3, -5], "a list holding -5, not an id from 0 to 2**63 - 1"),
    ],
)
def test_what_is_not_token_ids_is_named(turns: Any, tokenizer: Callable[[str], Any], returned: str) -> None:
    with pytest.raises(TokenizerError) as caught:
        turns.tokenize(tokenizer)[0]
    assert str(caught.value) == (
        f"the tokenizer returned {returned} for a text; a callable tokenizer must return a list of "
        "token ids (a Hugging Face tokenizer object is used as one)"
    )
    assert turns.tokenize(lambda t: [np.int32(3), 4])[0]["input_ids"] == [3, 4]


def test_content_parts_are_their_json_text_in_role_content_lines(tmp_path: Path) -> None:
    """A message whose content is typed parts is its JSON text in the ``role: content`` lines a
    tokenizer without a template reads, as the ``chat`` column of ``to_hf`` has it (before:
    Python's repr, ``[{'type': 'text', ...}]``, 2 of 2 chats)."""
    path = tmp_path / "parts.jsonl"
    parts = [{"type": "text", "text": "hé"}]
    messages = [{"role": "user", "content": parts}, {"role": "assistant", "content": "yo"}]
    path.write_text(json.dumps({"id": "c", "messages": messages}) + "\n", encoding="utf-8")
    convbank.import_conversations(path, name="parts")
    seen: list[str] = []

    def tokenizer(text: str) -> list[int]:
        seen.append(text)
        return [7] * len(text)

    row = convbank.load("parts").examples("chat").tokenize(tokenizer, template=False)[0]
    assert seen == ['user: [{"type":"text","text":"hé"}]\nassistant: ', "yo\n"]
    assert row["labels"] == [-100] * len(seen[0]) + [7] * 3
