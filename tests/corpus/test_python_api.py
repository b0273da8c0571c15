"""The Python API: load, Corpus, sql, a curated __all__; and scale behaviour of the bank."""

from __future__ import annotations

import gc
import tracemalloc
import types
from pathlib import Path

import pytest

import convbank
from convbank import Conversation, ConversationNotFoundError, NotBuiltError, load
from convbank.build import build
from convbank.datasets.pec.synthetic import write_pec
from convbank.fetch import Fetcher
from convbank.store import Bank


def test_all_is_curated_and_complete() -> None:
    exported = set(convbank.__all__)
    assert all(hasattr(convbank, name) for name in exported)
    public = {
        n for n, v in vars(convbank).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public - exported == set(), "public names missing from __all__"
    errors = {n for n in exported if n.endswith("Error")}
    assert errors == set(convbank.errors.__all__)


def test_corpus_len_iter_getitem(built: Bank) -> None:
    corpus = load("casino")
    assert len(corpus) == 1030
    assert (
        repr(corpus) == "<Corpus casino: 1,030 conversations in default/train, default/valid, default/test>"
    )
    assert len(load("casino", split="valid")) == 30
    conv = corpus["938"]
    assert isinstance(conv, Conversation) and conv.split == "train" and conv.num_turns == 13
    assert "938" in corpus and "nope" not in corpus and 938 not in corpus
    assert [p.participant_id for p in conv.participants] == ["mturk_agent_1", "mturk_agent_2"]
    ids = [c.conversation_id for c in corpus]
    assert len(ids) == 1030 == len(set(ids)) and ids[0] == "938"
    with pytest.raises(ConversationNotFoundError):
        corpus["nope"]


def test_corpus_tables_and_sql(built: Bank) -> None:
    corpus = load("convai2", config="volunteers")
    turns = corpus.to_arrow("turns")
    assert turns.num_rows == 14623 and turns.column_names[:4] == [
        "dataset",
        "config",
        "split",
        "conversation_id",
    ]
    assert corpus.to_arrow("raw").num_rows == 1111
    frame = corpus.to_pandas("conversations")
    assert len(frame) == 1111
    result = corpus.sql("SELECT count(*) AS n FROM turns WHERE dataset = 'convai2' AND config = 'volunteers'")
    assert result.to_pylist() == [{"n": 14623}]
    pec = load("pec", config="all", split="train")
    assert len(pec) == 5 and {c.config for c in pec} == {"happy", "offmychest"}


def test_not_built(tmp_path: Path) -> None:
    with pytest.raises(
        NotBuiltError, match=r"^casino is not in the bank at .*; run `convbank build casino` first$"
    ):
        load("casino")


def test_a_list_of_datasets_is_one_clear_error(built: Bank) -> None:
    """Before: TypeError: unhashable type: 'list' from registry.py."""
    with pytest.raises(convbank.UnknownDatasetError) as caught:
        load(["casino", "convai2"])  # type: ignore[arg-type]
    assert str(caught.value) == (
        "a corpus holds one dataset, not 2 ('casino', 'convai2'): load each "
        "([convbank.load(name) for name in names]), or query them together with convbank.sql"
    )
    with pytest.raises(
        convbank.UnknownDatasetError, match=r"^a dataset is named by one string, not a dict \("
    ):
        convbank.Corpus({"casino": 1})  # type: ignore[arg-type]


def _build_synthetic(root: Path, n: int, batch: int) -> tuple[Bank, int]:
    write_pec(root / "src", n, seed=7, speakers=500)
    bank = Bank(root / "bank")
    gc.collect()
    tracemalloc.start()
    report = build(
        ["pec"],
        config="happy",
        fetcher=Fetcher(sources=[root / "src"], verify=False),
        bank=bank,
        batch_size=batch,
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert sum(s.conversations for s in report.splits) == n + 2 * (n // 10)
    return bank, peak


def test_build_memory_is_flat_and_lookup_reads_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build_synthetic(tmp_path / "warm-up", 500, 250)  # one-time import and allocator costs
    _, small = _build_synthetic(tmp_path / "small", 2000, 250)
    big_bank, big = _build_synthetic(tmp_path / "big", 8000, 250)
    print(f"tracemalloc peak: 2,000 conversations {small / 2**20:.1f} MiB, 8,000 {big / 2**20:.1f} MiB")
    assert big < small * 1.5, (small, big)  # four times the corpus, not four times the memory
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "big"))
    corpus = load("pec", config="happy", split="train", bank=big_bank)
    last = corpus["happy-train-007999"]
    assert last.source_index == 7999 and last.conversation_id == "happy-train-007999"
    assert last.participant(last.turns[-1].participant_id).role == "responder"
    assert sum(1 for _ in corpus) == 8000


def test_take_many_by_id_in_the_order_given(built: Bank) -> None:
    corpus = convbank.load("convai2", "volunteers")
    every = [c.conversation_id for c in corpus]
    wanted = [every[900], every[3], every[900], every[-1]]
    taken = corpus.take(wanted)
    assert [c.conversation_id for c in taken] == wanted
    assert taken[1] == corpus[every[3]] and taken[0] == taken[2]
    with pytest.raises(convbank.ConversationNotFoundError, match="convai2 has no conversation 'nope'"):
        corpus.take([every[0], "nope"])
    # ids are strings (CaSiNo's look like numbers): a position given to take() is one line
    with pytest.raises(TypeError) as raised:
        convbank.load("casino").take(["938", 0])
    assert str(raised.value) == "take() takes conversation ids (strings), not int 0; select() takes positions"


def test_filter_by_label_and_by_metadata(built: Bank) -> None:
    casino = convbank.load("casino")
    uv = casino.filter(label="strategy:uv-part")
    expected = sorted(
        {
            r["conversation_id"]
            for r in convbank.sql(
                "SELECT conversation_id FROM annotations WHERE dataset = 'casino' AND label = 'uv-part'"
            ).to_pylist()
        }
    )
    assert sorted(c.conversation_id for c in uv) == expected and len(uv) == 89
    assert all(any(a.label == "uv-part" for a in c.annotations) for c in uv)
    train = convbank.load("casino", split="train").filter(label="strategy:uv-part")
    assert len(train) == 81 and {c.split for c in train} == {"train"}
    fives = convbank.load("convai2", "volunteers").filter("(meta->>'eval_score')::INT = 5")
    (count,) = (
        convbank.sql(
            "SELECT count(*) AS n FROM conversations WHERE config = 'volunteers' AND meta->>'eval_score' = '5'"
        )
        .column(0)
        .to_pylist()
    )
    assert len(fives) == count == 79 and {c.meta["eval_score"] for c in fives} == {5}
    assert isinstance(fives, convbank.Corpus)
    with pytest.raises(convbank.UnknownFieldError, match="convai2 has no annotation layer 'nope'"):
        convbank.load("convai2", "volunteers").filter("(meta->>'eval_score')::INT = 5", label="nope:x")
    order = [c.source_index for c in fives]
    assert order == sorted(order)  # source order


@pytest.mark.parametrize(
    ("given", "named"),
    [(5, "int 5"), (b"938", "bytes b'938'"), (None, "NoneType None"), (["938", None], "NoneType None")],
)
def test_take_given_a_position_bytes_or_none_names_it(built: Bank, given: object, named: str) -> None:
    """Nineteenth pass. Before: ``take(5)`` was Python's `'int' object is not iterable`,
    ``take(b"938")`` named `int 57` (a byte of it), and ``take(None)`` or ``take(["938",
    None])`` `'<' not supported between instances of 'NoneType' and 'str'` (4 of 4 calls)."""
    with pytest.raises(TypeError) as raised:
        convbank.load("casino").take(given)  # type: ignore[arg-type]
    assert (
        str(raised.value) == f"take() takes conversation ids (strings), not {named}; select() takes positions"
    )
