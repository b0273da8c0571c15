"""A NaN or an infinity in an imported record is a bad record naming where, never stored as
``null`` (JSON has no such number, and a JSON line holding ``1e400`` is refused): a Hugging
Face dataset's value, and any reader's conversation (an installed format's) caught where the
import stores it. Before: a Hugging Face dataset's ``inf`` column was imported as meta
``null``, exit 0 (2 of 2 datasets: in memory and ``save_to_disk``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import convbank
from convbank.errors import CorpusImportError
from convbank.imports._store import _meta_problem
from convbank.model import Conversation, Turn


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_hugging_face_datasets_infinity_is_a_bad_row(tmp_path: Path, on_disk: bool) -> None:
    datasets = pytest.importorskip("datasets")
    rows = {"id": ["a", "b"], "messages": [[{"role": "user", "content": "x"}]] * 2, "score": [1.0, math.inf]}
    data = datasets.Dataset.from_dict(rows)
    source = data
    if on_disk:
        data.save_to_disk(str(tmp_path / "d"))
        source = tmp_path / "d"
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(source, name="mine")
    assert "row 2: expected finite numbers, not inf (JSON has no such number)" in str(caught.value)


def test_a_readers_conversation_holding_nan_is_a_bad_record_where_it_is_stored() -> None:
    turn = Turn(turn_index=0, participant_id="a", text="x", meta={"v": [1, {"w": math.nan}]})
    conv = Conversation(dataset="d", config="c", split="s", conversation_id="1", source_index=0, turns=[turn])
    assert _meta_problem(conv) == "meta of finite numbers, not nan (turn 0's meta)"
    conv.turns[0].meta = {}
    conv.meta = {"deep": [[[[-math.inf]]]]}
    assert _meta_problem(conv) == "meta of finite numbers, not -inf (its meta)"
