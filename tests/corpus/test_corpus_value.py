"""The Corpus as a value: positions, slices, selections, shuffles, shards and splits that are
corpora; pickling across processes; typed metadata frames; streams; notebook display."""

from __future__ import annotations

import gc
import json
import multiprocessing
import pickle
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import convbank
from convbank import (
    Conversation,
    ConversationNotFoundError,
    Corpus,
    MissingExtraError,
    UnknownDatasetError,
    UnknownFieldError,
)
from convbank.build import build
from convbank.datasets.pec.synthetic import write_pec
from convbank.fetch import Fetcher
from convbank.store import Bank


def _ids(corpus: Corpus) -> list[str]:
    return [c.conversation_id for c in corpus]


def test_positions_slices_and_ids_agree_with_iteration(built: Bank) -> None:
    corpus = convbank.load("casino")
    order = _ids(corpus)
    assert len(order) == 1030 and corpus.conversation_ids() == order
    assert [corpus[i].conversation_id for i in (0, 1, 899, 900, 1029, -1, -1030)] == [
        order[0],
        order[1],
        order[899],
        order[900],
        order[1029],
        order[-1],
        order[0],
    ]
    assert corpus[900].split == "valid" and corpus[930].split == "test"
    window = corpus[895:905]
    assert isinstance(window, Corpus) and len(window) == 10 and _ids(window) == order[895:905]
    assert {c.split for c in window} == {"train", "valid"}
    assert _ids(corpus[::100]) == order[::100] and _ids(corpus[-3:]) == order[-3:]
    assert len(corpus[5:5]) == 0 and list(corpus[5:5]) == []
    with pytest.raises(IndexError, match="position 1030 is outside this corpus of 1,030 conversations"):
        corpus[1030]
    with pytest.raises(TypeError, match=r"indexed by conversation id \(a str, such as '938'\)"):
        corpus[1.5]  # type: ignore[index]


def test_random_access_builds_the_same_conversations_as_iteration(built: Bank) -> None:
    corpus = convbank.load("casino", cache_bytes=2**20)  # a cache of about one batch: evictions
    every = list(convbank.load("casino"))
    rng = np.random.default_rng(3)
    for i in rng.integers(0, 1030, 300).tolist():
        assert corpus[i] == every[i]
    first, again = corpus[7], corpus[7]
    assert first == again and first is not again  # a new object each time: the cache is not shared
    first.turns[0].text = "changed"
    first.participants[0].persona.append("changed")
    assert corpus[7] == every[7]


def test_select_shuffle_shard_and_split_are_corpora_of_the_right_conversations(built: Bank) -> None:
    corpus = convbank.load("casino")
    order = corpus.conversation_ids()
    picked = corpus.select([5, 0, 5, -1])
    assert _ids(picked) == [order[5], order[0], order[5], order[-1]]
    with pytest.raises(IndexError, match=r"^position 2000 is outside this corpus of 1,030 conversations$"):
        corpus.select([1, 2000])
    shuffled = corpus.shuffle(seed=0)
    assert sorted(_ids(shuffled)) == sorted(order) and _ids(shuffled) != order
    assert _ids(corpus.shuffle(seed=0)) == _ids(shuffled) and _ids(corpus.shuffle(seed=1)) != _ids(shuffled)
    shards = [corpus.shard(4, i) for i in range(4)]
    assert [len(s) for s in shards] == [258, 258, 257, 257]
    assert [c for s in shards for c in s.conversation_ids()] == order
    strided = [corpus.shard(3, i, contiguous=False) for i in range(3)]
    assert sorted(c for s in strided for c in s.conversation_ids()) == sorted(order)
    split = convbank.load("casino", split="train").train_test_split(0.1, seed=0)
    assert len(split["train"]) == 810 and len(split["test"]) == 90
    assert set(split["train"].conversation_ids()).isdisjoint(split["test"].conversation_ids())
    chained = corpus.filter(label="strategy:uv-part").shuffle(seed=2)[:10].select([9, 0])
    assert len(chained) == 2 and all(any(a.label == "uv-part" for a in c.annotations) for c in chained)
    with pytest.raises(ValueError, match="test_size 0 leaves no train or no test among 1,030"):
        corpus.train_test_split(0)


def test_a_selection_answers_only_for_its_conversations(built: Bank) -> None:
    corpus = convbank.load("casino")
    few = corpus.select([0, 1])
    first, second = few.conversation_ids()
    outside = corpus[2].conversation_id
    assert first in few and outside not in few and few[first].conversation_id == first
    with pytest.raises(
        ConversationNotFoundError, match=f"this selection of casino has no conversation '{outside}'"
    ):
        few[outside]
    with pytest.raises(ConversationNotFoundError):
        few.take([outside])
    assert few.neighbours(first) == (None, second) and few.neighbours(second) == (first, None)
    assert repr(few) == "<Corpus casino: 2 conversations (selected from 1,030) in default/train>"


def test_filter_by_sql_function_label_and_meta_returns_corpora(built: Bank) -> None:
    volunteers = convbank.load("convai2", "volunteers")
    by_sql = volunteers.filter("(meta->>'eval_score')::INT = 5")
    by_meta = volunteers.filter(meta={"eval_score": 5})
    by_function = volunteers.filter(lambda c: c.meta.get("eval_score") == 5)
    assert len(by_sql) == len(by_meta) == len(by_function) == 79
    assert by_sql.conversation_ids() == by_meta.conversation_ids() == by_function.conversation_ids()
    both = volunteers.filter("num_turns > 10", meta={"eval_score": 5})
    assert 0 < len(both) < 79 and all(c.num_turns > 10 for c in both)
    uv = convbank.load("casino").filter(label="strategy:uv-part")
    both_labels = (
        convbank.sql(
            "SELECT count(*) FROM (SELECT conversation_id FROM annotations WHERE dataset = 'casino' "
            "GROUP BY ALL HAVING bool_or(label = 'uv-part') AND bool_or(label = 'small-talk'))"
        )
        .column(0)[0]
        .as_py()
    )
    assert len(uv) == 89 and len(uv.filter(label="strategy:small-talk")) == both_labels == 66


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"label": "uv-part"},
            "casino has no annotation layer 'uv-part' (a label is layer:label); did you mean "
            "strategy:uv-part? layers: strategy",
        ),
        (
            {"label": "strategy:uv_part"},
            "casino has no label 'uv_part' in layer 'strategy'; did you mean strategy:uv-part?",
        ),
        (
            {"meta": {"satisfacton": "x"}},
            "casino conversations have no meta key 'satisfacton'; keys: participant_info_order",
        ),
        (
            {"where": "meta->>'eval_scor' = '5'"},
            "casino conversations have no meta key 'eval_scor'; keys: participant_info_order",
        ),
    ],
)
def test_a_typo_in_a_label_layer_or_meta_key_is_an_error_listing_the_known_ones(
    built: Bank, kwargs: dict[str, object], message: str
) -> None:
    """Before: these were UnknownDatasetError (a wrong name); now UnknownFieldError, exit 2."""
    with pytest.raises(UnknownFieldError) as caught:
        convbank.load("casino").filter(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)
    assert not isinstance(caught.value, UnknownDatasetError) and isinstance(caught.value, KeyError)
    assert caught.value.exit_code == 2


def _pickle_roundtrip(corpus: Corpus) -> list[dict[str, object]]:
    return [c.to_dict() for c in pickle.loads(pickle.dumps(corpus))]


def test_a_corpus_pickles_and_reopens_the_same_generation_in_another_process(built: Bank) -> None:
    corpus = convbank.load("casino").filter(label="strategy:uv-part").shuffle(seed=4)[:25]
    again = pickle.loads(pickle.dumps(corpus))
    assert isinstance(again, Corpus) and again.snapshot.generation == corpus.snapshot.generation
    assert list(again) == list(corpus) and len(again) == 25
    whole = pickle.loads(pickle.dumps(convbank.load("convai2", "volunteers")))
    assert len(whole) == 1111 and whole[10] == convbank.load("convai2", "volunteers")[10]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_pickle_roundtrip, [corpus, corpus[:3]])
    assert results[0] == [c.to_dict() for c in corpus] and len(results[1]) == 3


def test_a_pickled_corpus_reads_its_generation_after_a_rebuild(
    built_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, all_sources: list[Path]
) -> None:
    import shutil

    home = tmp_path / "home"
    shutil.copytree(built_home, home, symlinks=True)
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    corpus = convbank.load("casino", split="valid")
    data = pickle.dumps(corpus[:5])
    build(["casino"], fetcher=Fetcher(sources=all_sources))  # a new generation
    old = pickle.loads(data)
    assert old.snapshot.generation == corpus.snapshot.generation != Bank().manifest().generation
    assert list(old) == list(corpus[:5])


def test_typed_meta_keeps_the_published_values_with_typed_views_beside(built: Bank) -> None:
    volunteers = convbank.load("convai2", "volunteers").to_arrow()
    meta_type = volunteers.schema.field("meta").type
    assert pa.types.is_struct(meta_type)
    assert meta_type.field("eval_score").type == pa.int64()
    assert meta_type.field("start_time").type == pa.string()
    rows = {
        r["conversation_id"]: r["meta"] for r in volunteers.select(["conversation_id", "meta"]).to_pylist()
    }
    stored = {
        r["conversation_id"]: json.loads(r["meta"])
        for r in convbank.sql(
            "SELECT conversation_id, meta FROM conversations WHERE config = 'volunteers'"
        ).to_pylist()
    }
    for cid, meta in rows.items():
        assert meta["eval_score"] == stored[cid].get("eval_score")
        # profile_match mixes 0, 1 and "": it stays JSON text
        assert meta["profile_match"] == json.dumps(stored[cid]["profile_match"])
    turns = convbank.load("casino").to_arrow("turns")
    actions = turns.filter(pc.equal(turns["kind"], "action")).to_pylist()
    deals = [r for r in actions if r["deal_counts"] is not None]
    assert len(deals) > 1000
    for r in deals:
        published = r["meta"]["task_data"]["issue2youget"]
        assert set(published.values()) <= {"0", "1", "2", "3"}
        assert r["deal_counts"]["issue2youget"] == {k: int(v) for k, v in published.items()}
    flat = convbank.load("casino").to_arrow("participants", flatten_meta=True)
    assert "meta.outcomes.points_scored" in flat.column_names and "meta" not in flat.column_names
    assert flat.column("meta.outcomes.points_scored").type == pa.int64()
    as_json = convbank.load("casino").to_arrow("turns", meta="json")
    assert as_json.schema.field("meta").type == pa.string() and "deal_counts" not in as_json.column_names


def test_typed_meta_is_one_type_whatever_the_load(built: Bank) -> None:
    """CaSiNo's deals hold ``Food``, ``Firewood`` and ``Water`` in either order (the
    publisher's). Before: the struct's keys came in the order DuckDB's threads met them, so
    20 loads of one bank typed ``to_arrow("turns")`` two ways (6 ``Food, Firewood, Water``,
    14 ``Firewood, Food, Water``), and tables of two loads could not be concatenated. Now
    the keys are in the order they first appear, row by row."""
    types = set()
    for _ in range(12):
        corpus = convbank.load("casino", split="train")
        types.add(str(corpus.to_arrow("turns").schema.field("meta").type))
        corpus.close()
    assert len(types) == 1
    deal = pa.struct([("Food", pa.string()), ("Firewood", pa.string()), ("Water", pa.string())])
    meta = convbank.load("casino", split="train").to_arrow("turns").schema.field("meta").type
    assert meta.field("task_data").type.field("issue2youget").type == deal


def test_frames_of_a_selection_follow_its_order_and_repeats(built: Bank) -> None:
    corpus = convbank.load("casino")
    chosen = corpus.select([3, 1, 3])
    ids = chosen.conversation_ids()
    conversations = chosen.to_arrow()
    assert conversations.column("conversation_id").to_pylist() == ids
    turns = chosen.to_arrow("turns")
    expected = [(c.conversation_id, t.turn_index, t.text) for c in chosen for t in c.turns]
    got = list(
        zip(*(turns.column(n).to_pylist() for n in ("conversation_id", "turn_index", "text")), strict=True)
    )
    assert got == expected
    raw = chosen.to_arrow("raw")
    assert raw.column("dialogue_id").to_pylist() == [int(i) for i in ids]
    frame = corpus.to_pandas("turns", flatten_meta=True)
    assert len(frame) == 14297 and "meta.task_data.issue2youget.Food" in frame.columns


def test_turns_with_labels_is_the_turns_with_their_annotations(built: Bank) -> None:
    corpus = convbank.load("casino")
    table = corpus.turns_with_labels()
    assert table.num_rows == 14297
    labelled = table.filter(pc.greater(pc.list_value_length(table["labels"]), 0))
    counts = convbank.sql(
        "SELECT count(DISTINCT (conversation_id, turn_index)) AS n, count(*) AS a FROM annotations "
        "WHERE dataset = 'casino'"
    ).to_pylist()[0]
    assert labelled.num_rows == counts["n"]
    assert sum(len(x) for x in table.column("labels").to_pylist()) == counts["a"] == 5858
    conv = corpus["487"]
    rows = [r for r in table.to_pylist() if r["conversation_id"] == "487"]
    assert [r["labels"] for r in rows] == [
        [f"{a.layer}:{a.label}" for a in conv.annotations_of(t.turn_index)] for t in conv.turns
    ]


def test_iter_batches_streams_the_tables_and_respects_selections(built: Bank) -> None:
    corpus = convbank.load("casino")
    batches = list(
        corpus.iter_batches("turns", batch_size=1000, columns=["split", "conversation_id", "text"])
    )
    assert all(b.num_rows <= 1000 for b in batches) and batches[0].schema.names == [
        "split",
        "conversation_id",
        "text",
    ]
    assert sum(b.num_rows for b in batches) == 14297
    assert Counter(s for b in batches for s in b.column(0).to_pylist()) == {
        "train": 12501,
        "valid": 402,
        "test": 1394,
    }
    few = corpus.select([0, 5, 1000])
    streamed = pa.Table.from_batches(list(few.iter_batches("turns")))
    assert sorted(set(streamed.column("conversation_id").to_pylist())) == sorted(few.conversation_ids())
    assert streamed.num_rows == sum(c.num_turns for c in few)
    with pytest.raises(ValueError, match="batch_size must be a whole number of at least 1, not 0"):
        next(corpus.iter_batches(batch_size=0))


def _stream_peak(root: Path, n: int) -> int:
    write_pec(root / "src", n, seed=5, speakers=300)
    bank = Bank(root / "bank")
    build(["pec"], config="happy", fetcher=Fetcher(sources=[root / "src"], verify=False), bank=bank)
    corpus = convbank.load("pec", "happy", "train", bank=bank)
    gc.collect()
    tracemalloc.start()
    rows = sum(b.num_rows for b in corpus.iter_batches("turns", 4096))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert rows > n
    return peak


def test_iter_batches_memory_does_not_grow_with_the_corpus(tmp_path: Path) -> None:
    small = _stream_peak(tmp_path / "small", 4000)
    big = _stream_peak(tmp_path / "big", 16000)
    print(f"iter_batches peak: 4,000 conversations {small / 2**10:.0f} KiB, 16,000 {big / 2**10:.0f} KiB")
    # the Python heap's peak is a few KiB either way (the batches are Arrow memory, freed as
    # they go); a stream that kept what it read would hold 16,000 conversations' turns, over
    # 10 MiB as Python objects: a KiB more at 16,000 is noise, a MiB is not
    assert big < small * 1.5 + 2**20, (small, big)


def test_polars_frames_and_lazy_scans_equal_the_bank(built: Bank) -> None:
    pl = pytest.importorskip("polars")
    corpus = convbank.load("casino")
    frame = corpus.to_polars("turns")
    assert frame.height == 14297 and frame.schema["meta"].__class__.__name__ == "Struct"
    lazy = corpus.scan("turns")
    actions = lazy.filter(pl.col("kind") == "action").select("conversation_id", "text").collect()
    expected = convbank.sql("SELECT count(*) FROM turns WHERE dataset = 'casino' AND kind = 'action'").column(
        0
    )[0]
    assert actions.height == expected.as_py()
    plan = lazy.filter(pl.col("kind") == "action").select("text").explain()
    assert "SELECTION" in plan.upper() or "FILTER" in plan.upper()
    few = corpus.select([0, 1, 2])
    assert sorted(
        few.scan("turns").select("conversation_id").unique().collect().to_series().to_list()
    ) == sorted(few.conversation_ids())


def test_to_pandas_without_pandas_names_the_extra(built: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pandas" else real(name, *a)
    )
    with pytest.raises(MissingExtraError, match=r"install it with: pip install 'convbank\[pandas\]'"):
        convbank.load("casino").to_pandas()


def test_a_conversation_prints_short_and_renders_escaped_html(built: Bank) -> None:
    conv = convbank.load("casino")["487"]
    assert repr(conv) == "<Conversation casino/default/train '487': 2 participants, 12 turns, 10 annotations>"
    text = str(conv).splitlines()
    assert text[0] == repr(conv) and len(text) == 10 and text[-1] == "  ... 6 more turns"
    assert text[3] == "  #0 mturk_agent_1: Hi, how are you?  [small-talk]"
    html = conv._repr_html_()
    assert (
        "<script" not in html
        and "Submit-Deal" in html
        and "uv-part" in html
        and 'class="convbank-conv"' in html
    )
    hostile = Conversation(
        "casino",
        "default",
        "train",
        "x",
        0,
        [],
        [convbank.Turn(0, "a", "<script>alert(1)</script>\x1b[2J")],
        [],
        {},
    )
    rendered = hostile._repr_html_()
    assert "<script>alert" not in rendered and "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered
    assert "\x1b" not in str(hostile) and "\\x1b[2J" in str(hostile)


def test_an_empty_selection_has_empty_tables_with_the_columns(built: Bank) -> None:
    corpus = convbank.load("casino")
    for empty in (corpus[:0], corpus.filter("num_turns > 10000")):
        assert len(empty) == 0 and list(empty) == []
        for table in ("conversations", "participants", "turns", "annotations"):
            got = empty.to_arrow(table)
            whole = corpus.to_arrow(table)
            assert got.num_rows == 0 and got.column_names == whole.column_names, table
        assert empty.to_pandas("turns").empty


def test_a_label_of_the_dataset_absent_from_the_loaded_split_is_no_typo(built: Bank) -> None:
    valid = convbank.load("casino", split="valid")
    assert "uv-part" not in valid.labels()["strategy"]  # 9 in test, 122 in train, none in valid
    assert len(valid.filter(label="strategy:uv-part")) == 0
    with pytest.raises(UnknownFieldError, match="casino has no label 'uv_part' in layer 'strategy'"):
        valid.filter(label="strategy:uv_part")


def test_a_pickled_corpus_of_a_removed_import_reads_what_its_original_reads(tmp_path: Path) -> None:
    """Twentieth pass. Before: a pickled corpus of an imported dataset could not be unpickled
    once the dataset was removed from the bank (`unknown dataset 'mine'`), while the original,
    pinning its generation, still read it (2 of 2: a corpus and a selection). Now a pickle
    reads its dataset as its generation holds it; where that generation is gone (the original
    closed, a later import cleaned it), one line names the dataset and what to do."""
    from convbank.errors import NotBuiltError
    from convbank.imports import remove

    chats = tmp_path / "c.jsonl"
    record = '{{"id": "{}", "messages": [{{"role": "user", "content": "hi"}}]}}\n'
    chats.write_text(record.format("a") + record.format("b"))
    convbank.import_conversations(chats, name="mine")
    corpus = convbank.load("mine")
    data, part = pickle.dumps(corpus), pickle.dumps(corpus[1:])
    remove("mine")
    assert [c.conversation_id for c in pickle.loads(data)] == ["a", "b"] and pickle.loads(data) == corpus
    assert [c.conversation_id for c in pickle.loads(part)] == ["b"]
    generation = corpus.snapshot.generation
    corpus.close()
    del corpus
    gc.collect()
    convbank.import_conversations(chats, name="other")  # cleans the generations no reader pins
    with pytest.raises(NotBuiltError) as caught:
        pickle.loads(data)
    assert str(caught.value) == (
        f"a pickled corpus of 'mine' reads generation {generation} of the bank at {tmp_path / 'home' / 'bank'}, "
        "which is gone (closed, and cleaned since); load it again (convbank.load('mine'))"
    )
