"""Every switch and whole number the data layer takes is checked for its type: a string is
never read for its truth (``shuffle="no"`` is truthy), a bool never counted as the int Python
makes it (``PadCollator(pad_token_id=True)``); NumPy's bools and ints are their values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import convbank
from convbank.examples import mix, pack
from convbank.store import Bank
from convbank.torch import IterableCorpusDataset, PadCollator


def _view(corpus: Any) -> Any:
    return corpus.examples("turns")


SWITCHES: dict[str, tuple[str, Any]] = {
    "mix": ("shuffle", lambda c, v: mix([_view(c), _view(c)], shuffle=v)),
    "corpus.shard": ("contiguous", lambda c, v: c.shard(2, 0, contiguous=v)),
    "view.shard": ("contiguous", lambda c, v: _view(c).shard(2, 0, contiguous=v)),
    "corpus.sort": ("reverse", lambda c, v: c.sort("num_turns", reverse=v)),
    "view.sort": ("reverse", lambda c, v: _view(c).sort("turn_index", reverse=v)),
    "corpus.split": ("shuffle", lambda c, v: c.train_test_split(0.5, shuffle=v)),
    "view.split": ("shuffle", lambda c, v: _view(c).train_test_split(0.5, shuffle=v)),
    "map.batched": ("batched", lambda c, v: _view(c)[:2].map(lambda x: x, batched=v, cache=False)),
    "map.cache": ("cache", lambda c, v: _view(c)[:2].map(lambda x: x, cache=v)),
    "filter": ("hard", lambda c, v: c.filter("num_turns > 0", hard=v)),
    "sql": ("hard", lambda c, v: c.sql("SELECT 1", hard=v)),
    "to_arrow": ("flatten_meta", lambda c, v: c.to_arrow(flatten_meta=v)),
    "to_hf": ("streaming", lambda c, v: c.to_hf(streaming=v)),
    "pack": ("mask_boundaries", lambda c, v: pack(_view(c)[:0], 8, mask_boundaries=v)),
    "iterable": ("shuffle", lambda c, v: IterableCorpusDataset(c, "turns", shuffle=v)),
    "annotated": ("annotated", lambda c, v: c.examples("turns", layer="strategy", annotated=v)),
    "import": ("replace", lambda c, v: convbank.import_conversations(Path("no.jsonl"), name="x", replace=v)),
}


@pytest.mark.parametrize("call", list(SWITCHES))
@pytest.mark.parametrize("value", ["no", 0, 1.0], ids=["str", "int", "float"])
def test_a_switch_is_a_bool_never_read_for_its_truth(built: Bank, call: str, value: Any) -> None:
    """Before: each of these 17 switches took ``"no"`` as True and ``0`` as False, silently
    (``mix(..., shuffle="no")`` shuffled; ``to_arrow(flatten_meta="no")`` flattened)."""
    name, make = SWITCHES[call]
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(TypeError) as caught:
        make(corpus, value)
    assert str(caught.value) == f"{name} must be True or False, not {value!r}"


def test_switches_that_may_be_none_and_numpys_bools(built: Bank) -> None:
    """``token_labels``, ``template`` and ``chat`` say what else they take; NumPy's bools are
    bools (before: ``PadCollator(0, token_labels="no")`` and ``to_hf(chat=1)``, a chat column
    named ``1``, were taken)."""
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(TypeError, match=r"^token_labels must be True, False or None, not 'no'$"):
        PadCollator(0, token_labels="no")
    with pytest.raises(TypeError, match=r"^template must be True, False or None, not 1$"):
        _view(corpus).tokenize(lambda text: [1], template=1)
    with pytest.raises(TypeError, match=r"^chat must be True, False or a column's name, not 1$"):
        corpus.to_hf(chat=1)
    assert PadCollator(0, token_labels=np.bool_(True)).token_labels is True
    assert mix([_view(corpus)], shuffle=np.bool_(False)).shuffled is False
    assert len(corpus.shard(2, 0, contiguous=np.False_)) == 15


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda v: PadCollator(pad_token_id=v), "pad_token_id must be a whole number"),
        (lambda v: PadCollator(0, label_pad_id=v), "label_pad_id must be a whole number"),
        (
            lambda v: convbank.load("casino", cache_bytes=v),
            "cache_bytes must be a whole number of at least 0",
        ),
        (
            lambda v: (
                convbank.load("casino", split="valid").examples("turns")[:2].map(lambda x: x, num_proc=v)
            ),
            "num_proc must be a whole number of at least 1",
        ),
        (
            lambda v: IterableCorpusDataset(convbank.load("casino", split="valid"), rank=v, world_size=2),
            "rank must be a whole number of at least 0",
        ),
    ],
    ids=["pad_token_id", "label_pad_id", "cache_bytes", "num_proc", "rank"],
)
@pytest.mark.parametrize("value", [True, 1.5, "1"], ids=["bool", "float", "str"])
def test_a_whole_number_is_never_a_bool_a_float_or_a_text(
    built: Bank, make: Any, message: str, value: Any
) -> None:
    """Before: ``PadCollator(pad_token_id=True)`` padded with 1, ``1.5`` with 1 and ``"1"``
    with 1; ``load(cache_bytes="1")``, ``map(num_proc=True)`` and ``rank=True`` were taken
    (15 of 15 cases)."""
    with pytest.raises(TypeError) as caught:
        make(value)
    assert str(caught.value) == f"{message}, not {value!r}"


def test_a_pad_id_a_tensor_cannot_hold_is_named() -> None:
    """Before: ``PadCollator(2**70)`` was made, and its first batch an ``OverflowError``."""
    with pytest.raises(
        ValueError,
        match=r"^pad_token_id must be a whole number an int64 tensor holds, not 1180591620717411303424$",
    ):
        PadCollator(2**70)
    pad = PadCollator(np.int64(3), label_pad_id=np.int32(-1))
    assert (pad.pad_token_id, pad.label_pad_id) == (3, -1)
    assert type(pad.pad_token_id) is int


IMPORT_ARGUMENTS: list[tuple[dict[str, Any], str]] = [
    ({"card": 5}, "card must be a mapping of its fields, a TOML file's path or None, not 5"),
    ({"card": {5: "x"}}, "card must be a mapping of its fields, a TOML file's path or None, not {5: 'x'}"),
    ({"skip_bad": 5}, "skip_bad must be a path (a str or an os.PathLike) or None, not 5"),
    ({"skip_bad": ""}, "skip_bad must be a path, not an empty one ('')"),
    (
        {"mapping": [("text", "t")]},
        "mapping must be a mapping of names (a dict) or None, not [('text', 't')]",
    ),
    ({"progress": 5}, "progress must be a function or None, not 5"),
]


@pytest.mark.parametrize(("given", "message"), IMPORT_ARGUMENTS)
def test_an_imports_paths_fields_and_callback_are_checked_by_name(
    tmp_path: Path, given: dict[str, Any], message: str
) -> None:
    """Before: ``card=5``, ``skip_bad=5``, ``mapping=[...]`` and ``progress=5`` raised Python's
    own ``TypeError`` (``expected str, bytes or os.PathLike object, not int``), and
    ``skip_bad=""`` named the current folder as the rejects file (6 of 6)."""
    (path := tmp_path / "in.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    with pytest.raises((TypeError, ValueError)) as caught:
        convbank.import_conversations(path, name="args", **given)
    assert str(caught.value) == message


def test_to_hfs_side_is_a_name_given_with_the_chat_column(built: Bank) -> None:
    """Before: ``to_hf(as_participant=5)`` without ``chat=`` was taken and changed nothing."""
    corpus = convbank.load("casino")
    with pytest.raises(TypeError, match=r"^as_participant must be a string or None, not 5$"):
        corpus.to_hf(as_participant=5)
    with pytest.raises(ValueError, match=r"^as_participant='mturk_agent_1' is the side of the chat column"):
        corpus.to_hf(as_participant="mturk_agent_1")
