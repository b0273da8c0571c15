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


class _HfLike:
    """A tokenizer object of Hugging Face's interface giving ``ids(texts)`` as its input_ids."""

    def __init__(self, ids: Callable[[list[str]], Any], mask: Any = None) -> None:
        self.ids, self.mask = ids, mask

    def convert_tokens_to_ids(self, token: str) -> int:
        return 0

    def __call__(self, texts: list[str], **options: Any) -> dict[str, Any]:
        made = {"input_ids": self.ids(texts)}
        if options.get("return_special_tokens_mask"):
            made["special_tokens_mask"] = self.mask if self.mask is not None else [[0] * 2 for _ in texts]
        return made


@pytest.mark.parametrize(
    ("ids", "mask", "said"),
    [
        (lambda ts: [[1, 2]] * (len(ts) + 1), None, "2 lists as 'input_ids' for a batch of 1 text"),
        (lambda ts: [], None, "0 lists as 'input_ids' for a batch of 1 text"),
        (lambda ts: None, None, "NoneType as 'input_ids' for a batch of 1 text"),
        (lambda ts: [[1.5, 2]], None, "a list holding float as 'input_ids' for text 0 of a batch"),
        (
            lambda ts: [[1, -1]],
            None,
            "a list holding -1, not an id from 0 to 2**63 - 1 as 'input_ids' for text 0",
        ),
        (lambda ts: ["ab"], None, "str as 'input_ids' for text 0 of a batch"),
        (lambda ts: [np.array([1, 2])], None, "ndarray as 'input_ids' for text 0 of a batch"),
        (lambda ts: [[1, 2]], [[0]], "1 mark for 2 token ids as 'special_tokens_mask' for text 0 of a batch"),
    ],
)
def test_what_a_hugging_face_tokenizer_gives_is_checked_as_a_callables(
    turns: Any, ids: Callable[[list[str]], Any], mask: Any, said: str
) -> None:
    """Twentieth pass. Before: a tokenizer object's ``input_ids`` were taken unchecked: floats,
    negative ids, a string and arrays became a row's ``input_ids`` without a word, one list too
    many was dropped, one too few was `StopIteration` or `zip() argument 2 is shorter`, a
    missing key `KeyError: 'input_ids'` (8 of 8 answers). Now each is one line saying what it gave."""
    with pytest.raises(TokenizerError) as caught:
        turns.tokenize(_HfLike(ids, mask), max_length=1, template=False)[0]
    assert str(caught.value).startswith(f"the tokenizer gave {said}")
    good = _HfLike(lambda ts: [[np.int64(3), 4] for _ in ts])
    assert turns.tokenize(good, max_length=1, template=False)[0]["input_ids"] == [3]
