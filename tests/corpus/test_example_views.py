"""Example views of a corpus (``corpus.examples``) on the real CaSiNo and ConvAI2 files of the
session bank: counts per view and side checked against the bank's own tables through SQL,
labels and their ids against the annotations, targets against the participants' outcomes,
and the errors that name what exists."""

from __future__ import annotations

import math
import pickle
from collections import Counter
from typing import Any

import pytest

import convbank
from convbank import load
from convbank.errors import UnknownFieldError
from convbank.examples import Examples, concatenate
from convbank.store import Bank


def _count(query: str) -> int:
    return int(convbank.sql(query).column(0)[0].as_py())


def _keys(view: Examples) -> list[tuple[str, str, int]]:
    return [(x["split"], x["conversation_id"], x["turn_index"]) for x in view]


# ---------------------------------------------------------------------- turns
@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({}, "true"),
        ({"kind": "message"}, "kind = 'message'"),
        ({"kind": "action"}, "kind = 'action'"),
        ({"speaker": "mturk_agent_2"}, "participant_id = 'mturk_agent_2'"),
        ({"role": "negotiator", "kind": "action"}, "kind = 'action'"),
    ],
)
def test_turn_views_hold_the_bank_s_turns(built: Bank, options: dict[str, str], where: str) -> None:
    view = load("casino").examples("turns", **options)
    expected = _count(f"SELECT count(*) FROM turns WHERE dataset = 'casino' AND {where}")
    assert len(view) == expected
    assert len(set(_keys(view))) == expected


def test_turns_of_a_layer_are_the_annotated_turns_with_their_label_ids(built: Bank) -> None:
    corpus = load("casino")
    view = corpus.examples("turns", layer="strategy", annotated=True, target="multi_hot")
    rows = convbank.sql(
        "SELECT split, conversation_id, turn_index, list(DISTINCT label ORDER BY label) AS labels "
        "FROM annotations WHERE dataset = 'casino' AND layer = 'strategy' GROUP BY ALL"
    ).to_pylist()
    expected = {(r["split"], r["conversation_id"], r["turn_index"]): r["labels"] for r in rows}
    names = corpus.label_names("strategy")
    assert names == sorted(names) and len(names) == 10 and "uv-part" in names
    assert len(view) == len(expected) == 4615
    for x in view:
        vector = x["labels"]
        assert len(vector) == len(names) and set(vector) <= {0.0, 1.0}
        ids = [names[i] for i, v in enumerate(vector) if v]
        assert ids == expected[(x["split"], x["conversation_id"], x["turn_index"])]
        assert sorted(set(x["label_text"])) == ids


def test_annotated_conversations_are_a_filter_by_layer(built: Bank) -> None:
    annotated = load("casino").filter(layer="strategy")
    expected = _count("SELECT count(DISTINCT conversation_id) FROM annotations WHERE dataset = 'casino'")
    assert len(annotated) == expected == 396
    assert len(load("casino").filter(layer="strategy", label="strategy:uv-part")) == 89
    with pytest.raises(UnknownFieldError, match="casino has no annotation layer 'strat'"):
        load("casino").filter(layer="strat")


@pytest.mark.parametrize(
    ("view", "call"),
    [
        (lambda: load("casino", split="valid").examples("turns"), "class_weights"),
        (lambda: load("convai2", "volunteers").examples("turns"), "class_weights"),
        (lambda: load("casino", split="valid").examples("turns")[:5], "class_weights"),
        (lambda: load("casino", split="valid").examples("turns"), "label_names"),
    ],
)
def test_label_ids_and_weights_need_a_layer(built: Bank, view: Any, call: str) -> None:
    """A turns view without ``layer=`` has labels of every layer (``layer:label``), no ids:
    ``class_weights()`` and ``label_names()`` say so (before: CaSiNo's a bare ``KeyError:
    'strategy:small-talk'``, ConvAI2's ``[]`` and ``label_names()`` ``[]``, 4 of 4 cases)."""
    with pytest.raises(ValueError) as caught:
        getattr(view(), call)()
    assert str(caught.value) == (
        "class_weights() and label_names() need a view of one layer's labels "
        "(examples('turns', layer=...)); this turns view has every layer's 'layer:label'"
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_sort_puts_none_last_both_ways(built: Bank, reverse: bool) -> None:
    """``sort`` places examples without a value last, ascending or descending, as Hugging
    Face's ``sort`` and pandas do; ties and the None keep their order (before: with
    ``reverse=True`` the 518 unrated ConvAI2 dialogues came first, ahead of the 5s, 1 of 2
    directions; a column of dicts was Python's bare "'<' not supported")."""
    view = load("convai2", "volunteers").examples("conversations")
    scores = view["eval_score"]
    ordered = view.sort("eval_score", reverse=reverse)
    rated = sorted((s for s in scores if s is not None), reverse=reverse)
    assert ordered["eval_score"] == rated + [None] * 518 and len(rated) == 593
    ids = [x["conversation_id"] for x in view]
    unrated = [i for i, s in zip(ids, scores, strict=True) if s is None]
    assert ordered["conversation_id"][593:] == unrated  # in their order
    fives = [i for i, s in zip(ids, scores, strict=True) if s == 5]
    assert [x["conversation_id"] for x in ordered if x["eval_score"] == 5] == fives  # stable
    with pytest.raises(TypeError) as caught:
        load("convai2", "volunteers").examples("chat").sort("outcome")
    assert str(caught.value) == (
        "sort() cannot order column 'outcome': '<' not supported between instances of 'dict' and 'dict'"
    )


def test_label_ids_are_the_same_in_every_split(built: Bank) -> None:
    assert load("casino", split="test").label_names("strategy") == load("casino").label_names("strategy")


def test_a_class_target_is_one_id_per_turn_and_an_error_for_two(built: Bank) -> None:
    view = load("casino", split="valid").examples("turns", layer="strategy", target="class")
    turns = load("casino", split="valid").examples("turns", layer="strategy")
    first = view[0]  # 'Hello there! Are you getting excited...': small-talk alone
    assert first["label_text"] == ["small-talk"]
    assert first["labels"] == view.label_names().index("small-talk")
    action = turns["kind"].index("action")
    assert view[action]["labels"] == -100 and view[action]["label_text"] == []
    with pytest.raises(
        ValueError,
        match=r"turn \d+ has 2 strategy labels .*; target='class' needs at most one a turn: use target='multi_hot'",
    ):
        view.to_list()


def test_class_weights_count_the_training_examples(built: Bank) -> None:
    train = load("casino", split="train")
    view = train.examples("turns", layer="strategy", annotated=True)
    names = train.label_names("strategy")
    counts = Counter(name for x in view for name in set(x["labels"]))
    weights = view.class_weights()
    total = sum(counts.values())
    assert weights == pytest.approx([total / (len(counts) * counts[n]) if counts[n] else 0.0 for n in names])
    pos = view.class_weights("pos_weight")
    assert pos[names.index("small-talk")] == pytest.approx(
        (len(view) - counts["small-talk"]) / counts["small-talk"]
    )
    # a part of a split counts its own examples
    half = view.train_test_split(0.5, seed=1)["train"]
    assert half.class_weights() != weights


# ---------------------------------------------------------------------- responses
@pytest.mark.parametrize(
    ("dataset", "config", "side", "where"),
    [
        ("casino", None, None, "participant_id = 'mturk_agent_1'"),
        ("casino", None, "other", "participant_id = 'mturk_agent_2'"),
        ("casino", None, "both", "true"),
        ("casino", None, "mturk_agent_2", "participant_id = 'mturk_agent_2'"),
        ("convai2", "volunteers", None, "participant_id = 'participant2'"),
        ("convai2", "volunteers", "other", "participant_id = 'participant1'"),
    ],
)
def test_responses_are_the_turns_of_the_side(
    built: Bank, dataset: str, config: str | None, side: str | None, where: str
) -> None:
    view = load(dataset, config).examples("responses", side=side, history=3)
    configs = f"AND config = '{config}'" if config else ""
    assert len(view) == _count(
        f"SELECT count(*) FROM turns WHERE dataset = '{dataset}' {configs} AND {where}"
    )


def test_a_response_has_its_history_persona_and_messages(built: Bank) -> None:
    corpus = load("convai2", "volunteers")
    view = corpus.examples("responses", history=3)
    conv = corpus[view[5]["conversation_id"]]
    x = view[5]
    k = x["turn_index"]
    assert x["participant_id"] == "participant2" and x["role"] == "bot"
    assert x["response"] == conv.turns[k].text
    assert x["context"] == [t.text for t in conv.turns[max(0, k - 3) : k]]
    assert x["context_speakers"] == [t.participant_id for t in conv.turns[max(0, k - 3) : k]]
    assert x["persona"] == conv.participant("participant2").persona and x["persona"]
    assert x["messages"][0] == {"role": "system", "content": x["system"]}
    assert [m["content"] for m in x["messages"][1:]] == [*x["context"], x["response"]]
    assert x["messages"][-1]["role"] == "assistant"
    assert [m["role"] for m in x["messages"][1:-1]] == [
        "assistant" if s == "participant2" else "user" for s in x["context_speakers"]
    ]
    everything = corpus.examples("responses", history=None)
    last = max(everything, key=lambda r: (r["conversation_id"] == conv.conversation_id, r["turn_index"]))
    assert len(last["context"]) == last["turn_index"]


def test_casino_responses_show_deals_as_the_chat_export_does(built: Bank) -> None:
    view = load("casino").examples("responses", side="both")
    deals = [x for x in view if x["response"].startswith("[Submit-Deal]")]
    assert len(deals) == _count(
        "SELECT count(*) FROM turns WHERE dataset = 'casino' AND text = 'Submit-Deal'"
    )
    assert '"i_get"' in deals[0]["response"]
    messages = load("casino").examples("responses", kind="message")
    assert all(not x["response"].startswith("[") or x["response"][1:4] != "Sub" for x in messages)


# ---------------------------------------------------------------------- chat and conversations
def test_chat_from_both_sides_is_two_examples_per_conversation(built: Bank) -> None:
    from convbank.export.chat import chat_record

    corpus = load("casino", split="valid")
    view = corpus.examples("chat", side="both")
    assert len(view) == 2 * len(corpus) == 60
    assert [x["side"] for x in view[:2]] == ["mturk_agent_1", "mturk_agent_2"]
    conv = corpus[0]
    for x in view[:2]:
        record = chat_record(conv, x["side"])
        assert x["messages"] == record["messages"]
        assert x["outcome"] == record["metadata"]["outcome"]
    assert len(corpus.examples("chat")) == 30


@pytest.mark.parametrize("table", ["to_arrow", "to_polars", "to_pandas", "to_hf"])
def test_convai2_chat_examples_make_a_table(built: Bank, table: str) -> None:
    """ConvAI2's ``outcome`` has one type a field: an empty ``profile_match`` (the publisher's
    ``""``) is None, as in the ``conversations`` view's targets and the ``hf`` export, and so
    in the chat export's metadata (before: ``""`` beside 0 and 1, and every table of the
    ``chat`` view an ``ArrowInvalid``, 4 of 4 tables)."""
    from convbank.export.chat import chat_record

    corpus = load("convai2", "volunteers")
    view = corpus.examples("chat")
    made = getattr(view, table)()
    assert len(made) == len(view) == 1111
    outcomes = view.to_arrow().column("outcome").to_pylist()
    assert sum(o["profile_match"] is None for o in outcomes) == 628
    assert {o["profile_match"] for o in outcomes} == {None, 0, 1}
    assert outcomes == [
        {"eval_score": x["eval_score"], "profile_match": x["profile_match"]}
        for x in corpus.examples("conversations")
    ]
    assert chat_record(corpus[0], view[0]["side"])["metadata"]["outcome"] == view[0]["outcome"]


def test_conversation_targets_are_the_outcomes(built: Bank) -> None:
    corpus = load("casino")
    view = corpus.examples("conversations", side="both", target="points_scored")
    expected = dict(
        convbank.sql(
            "SELECT conversation_id || '/' || participant_id, "
            "CAST(json_extract(meta, '$.outcomes.points_scored') AS INTEGER) FROM participants "
            "WHERE dataset = 'casino'"
        )
        .to_pandas()
        .itertuples(index=False, name=None)
    )
    assert len(view) == len(expected) == 2060
    for x in view:
        assert x["labels"] == x["points_scored"] == expected[f"{x['conversation_id']}/{x['side']}"]
    assert view.target_names() == ["points_scored", "satisfaction", "opponent_likeness"]
    ratings = load("convai2", "volunteers").examples("conversations", target="eval_score")
    scores = Counter(x["labels"] for x in ratings)
    stored = convbank.sql(
        "SELECT json_extract(meta, '$.eval_score')::INTEGER AS s, count(*) AS n FROM conversations "
        "WHERE dataset = 'convai2' AND config = 'volunteers' GROUP BY ALL"
    ).to_pylist()
    assert scores == {r["s"]: r["n"] for r in stored}


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda c: c.examples("turn"),
            UnknownFieldError,
            "casino has no example view 'turn'; did you mean turns? views: turns, responses, chat, conversations",
        ),
        (
            lambda c: c.examples("turns", layr="strategy"),
            TypeError,
            "the turns view takes no option 'layr'; did you mean layer? its options: layer, annotated, target, speaker, role, kind",
        ),
        (
            lambda c: c.examples("turns", layer="strategi"),
            UnknownFieldError,
            "casino has no annotation layer 'strategi'; did you mean",
        ),
        (
            lambda c: c.examples("chat", side="mturk_agent_3"),
            UnknownFieldError,
            "casino has no participant 'mturk_agent_3' (side=); did you mean mturk_agent_2? sides: None (the dataset's, as the chat export), 'both', 'other', mturk_agent_1, mturk_agent_2",
        ),
        (
            lambda c: c.examples("conversations", target="points"),
            UnknownFieldError,
            "casino conversations have no target 'points'; did you mean points_scored? targets: points_scored, satisfaction, opponent_likeness",
        ),
        (
            lambda c: c.examples("turns", target="multi_hot"),
            ValueError,
            "target= and annotated=True need a layer= (the labels they use)",
        ),
        (
            lambda c: c.examples("responses", history=-1),
            ValueError,
            "history is a number of previous turns (0 or more) or None (all), not -1",
        ),
        (  # before: these three were views of 0 turns, without a word
            lambda c: c.examples("turns", speaker="mturk_agent1"),
            UnknownFieldError,
            "casino has no participant 'mturk_agent1' (speaker=); did you mean mturk_agent_1? participants: mturk_agent_1, mturk_agent_2",
        ),
        (
            lambda c: c.examples("turns", speaker=["mturk_agent_1", "bob"]),
            UnknownFieldError,
            "casino has no participant 'bob' (speaker=); participants: mturk_agent_1, mturk_agent_2",
        ),
        (
            lambda c: c.examples("turns", role="negotiatr"),
            UnknownFieldError,
            "casino has no role 'negotiatr' (role=); did you mean negotiator? roles: negotiator",
        ),
    ],
)
def test_a_view_or_option_that_does_not_exist_is_named(
    built: Bank, call: object, error: type, message: str
) -> None:
    with pytest.raises(error) as found:
        call(load("casino"))  # type: ignore[operator]
    assert str(found.value).strip("'\"").startswith(message)


def test_info_says_which_views_and_targets_a_dataset_offers(built: Bank) -> None:
    from convbank import catalog

    assert catalog.get("casino").describe()["examples"] == {
        "views": ["turns", "responses", "chat", "conversations"],
        "targets": ["points_scored", "satisfaction", "opponent_likeness"],
    }
    assert catalog.get("ccpe").describe()["examples"]["targets"] == []


# ---------------------------------------------------------------------- a value
def test_a_view_is_a_lazy_indexable_picklable_value(built: Bank) -> None:
    corpus = load("casino", split="valid")
    view = corpus.examples("turns", kind="message")
    assert view == corpus.examples("turns", kind="message") != corpus.examples("turns")
    back = pickle.loads(pickle.dumps(view))
    assert back == view and back.to_list() == view.to_list()
    assert len(pickle.dumps(corpus.examples("responses"))) < 2000  # the plan is not made yet: no rows
    labelled = pickle.loads(pickle.dumps(corpus.examples("turns", layer="strategy", target="class")))
    assert labelled.label_names() == corpus.label_names("strategy") and labelled[0]["labels"] == 7
    assert len(corpus.select([]).examples("turns")) == 0
    assert view[-1] == view.to_list()[-1]
    assert view[2:5].to_list() == view.to_list()[2:5]
    assert view.select([4, 4, 0]).to_list() == [view[4], view[4], view[0]]
    assert view["text"] == [x["text"] for x in view]
    assert view.sort("turn_index", reverse=True)[0]["turn_index"] == max(view["turn_index"])
    with pytest.raises(UnknownFieldError, match=r"these examples have no column 'txt'; did you mean text\?"):
        view["txt"]
    with pytest.raises(IndexError, match=r"position 999 is outside this view of 338 examples$"):
        view[999]
    assert repr(view) == "<casino turns (kind='message'): 338 examples>"


@pytest.mark.parametrize(
    "empty",
    [
        lambda v: v.filter(lambda x: False),
        lambda v: v.select([]),
        lambda v: v[5:5],
        lambda v: v.shuffle(seed=0).filter(lambda x: False).shuffle(seed=1),
        lambda v: concatenate([v.select([]), v[3:3]]),
    ],
    ids=["filter", "select", "slice", "shuffled-filter", "concatenated"],
)
@pytest.mark.parametrize(
    ("kind", "options"),
    [("turns", {}), ("turns", {"layer": "strategy", "target": "multi_hot"}), ("responses", {"history": 2})],
)
def test_a_view_of_no_examples_keeps_its_columns_and_types(
    built: Bank, empty: Any, kind: str, options: dict[str, Any]
) -> None:
    """An empty view made from a view (a filter that keeps nothing, ``select([])``, ``[5:5]``)
    has the columns and types of that view's examples, as a Hugging Face ``Dataset`` keeps its
    features (before: no columns at all, ``view["text"]`` an ``UnknownFieldError`` listing
    none, and the tables of 0 columns, 4 of 4 ways, 3 of 3 views)."""
    view = load("casino", split="valid").examples(kind, **options)
    schema = view.to_arrow().schema
    none = empty(view)
    assert len(none) == 0 and none.column_names == view.column_names == schema.names
    assert none["text" if kind == "turns" else "response"] == []
    assert none.to_arrow().schema == schema and none.to_arrow().num_rows == 0
    assert none.to_polars().columns == schema.names and none.to_pandas().shape == (0, len(schema))
    assert none.to_hf().column_names == schema.names
    assert none.select_columns(["conversation_id"]).to_arrow().schema.names == ["conversation_id"]
    words = none.tokenize(lambda text: [len(w) for w in text.split()], template=False)
    assert words.column_names == [*schema.names, *[c for c in words.column_names if c not in schema.names]]
    assert "input_ids" in words.column_names and words.to_arrow().num_rows == 0


def test_views_of_a_selection_follow_its_order(built: Bank) -> None:
    corpus = load("casino").filter(label="strategy:uv-part").shuffle(seed=3)[:7]
    view = corpus.examples("turns")
    ids = [x["conversation_id"] for x in view]
    assert list(dict.fromkeys(ids)) == corpus.conversation_ids()
    assert len(view) == sum(c.num_turns for c in corpus)


def test_concatenate_views_of_two_datasets(built: Bank) -> None:
    casino = load("casino", split="valid").examples("turns")
    convai2 = load("convai2", "intermediate").examples("turns")
    both = concatenate([casino, convai2])
    assert len(both) == 402 + 4316
    assert both[401] == casino[401] and both[402] == convai2[0]
    assert Counter(x["dataset"] for x in both.select([0, 401, 402, 4717])) == {"casino": 2, "convai2": 2}


@pytest.mark.parametrize("how", ["mix", "concatenate"])
def test_views_of_two_datasets_keep_every_column(built: Bank, how: str) -> None:
    """Examples whose keys differ (each dataset's ``conversations`` have its own targets)
    keep all of them, None where an example has not the key, as Hugging Face aligns the
    features it interleaves: ``column_names``, ``view[key]``, the tables and ``collate``
    (before: the tables had the first example's keys alone, the other dataset's targets
    dropped without a word, ``view["points_scored"]`` an ``UnknownFieldError`` and
    ``collate`` a bare ``KeyError``; 4 of 4 ways, 2 of 2 combinations)."""
    from convbank.examples import mix
    from convbank.torch import collate

    casino = load("casino", split="valid").examples("conversations")
    convai2 = load("convai2", "volunteers").examples("conversations")
    both = mix([convai2, casino], seed=0) if how == "mix" else concatenate([convai2, casino])
    names = list(dict.fromkeys([*convai2.column_names, *casino.column_names]))
    names += ["source"] if how == "mix" else []
    assert both.column_names == names and "points_scored" in names and "eval_score" in names
    table = both.to_arrow()
    assert table.column_names == names and table.num_rows == len(both)
    dataset = table.column("dataset").to_pylist()
    for column, owner in (("points_scored", "casino"), ("eval_score", "convai2")):
        values = table.column(column).to_pylist()
        assert {d for d, v in zip(dataset, values, strict=True) if v is not None} == {owner}
        assert both[column] == values
    assert both.to_polars().columns == names and list(both.to_pandas().columns) == names
    rows = [both[i] for i in range(len(both))]
    batch = collate(rows[:3] + [r for r in rows if r["dataset"] == "casino"][:2])
    assert set(batch) == set(names) and batch["points_scored"][-1] is not None


def test_stratified_splits_keep_the_shares(built: Bank) -> None:
    corpus = load("casino", split="train")
    parts = corpus.train_test_split(0.2, seed=0, stratify="strategy:uv-part")
    having = set(corpus.filter(label="strategy:uv-part").conversation_ids())
    test_ids = parts["test"].conversation_ids()
    assert len(test_ids) == 180 and len(parts["train"]) == 720
    assert sum(c in having for c in test_ids) == round(len(having) * 0.2)
    scored = load("convai2", "volunteers").train_test_split(0.25, stratify="eval_score")
    shares = Counter(c.meta["eval_score"] for c in scored["test"])
    whole = Counter(c.meta["eval_score"] for c in load("convai2", "volunteers"))
    assert all(abs(shares[k] - whole[k] * 278 / 1111) < 1 for k in whole)
    view = corpus.examples("turns", layer="strategy", annotated=True)
    split = view.train_test_split(0.2, stratify="labels")
    assert len(split["test"]) == math.ceil(len(view) * 0.2)
    strata = Counter(tuple(sorted(set(x["labels"]))) for x in view)
    tested = Counter(tuple(sorted(set(x["labels"]))) for x in split["test"])
    assert all(abs(tested[k] - n * len(split["test"]) / len(view)) < 1 for k, n in strata.items())
