"""Tokenised example views and ``map`` with its cache, on the real CaSiNo and ConvAI2 files: a
word-level tokenizer trained on the corpus in the test (no download), token ids checked
against the tokenizer itself, labels masked on exactly the context, the cache reused across
calls and processes and invalidated by a rebuild."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from convbank import load
from convbank.build import build
from convbank.errors import UnknownFieldError
from convbank.examples import IGNORE_INDEX, MapError, TokenizerError
from convbank.fetch import Fetcher
from convbank.store import Bank
from testsupport import SHARED

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def _tokenizer(texts: list[str], template: str | None = TEMPLATE) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    model = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ["[PAD]", "[UNK]", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]
    model.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=special))
    tok = PreTrainedTokenizerFast(
        tokenizer_object=model, pad_token="[PAD]", unk_token="[UNK]", bos_token="<s>", eos_token="</s>"
    )
    if template is not None:
        tok.chat_template = template
    return tok


@pytest.fixture(scope="module")
def tokenizer(built_home: Path) -> Any:
    import os

    os.environ["CONVBANK_HOME"] = str(built_home)
    try:
        texts = (
            load("casino").examples("turns")["text"] + load("convai2", "volunteers").examples("turns")["text"]
        )
    finally:
        del os.environ["CONVBANK_HOME"]
    return _tokenizer(texts)


def test_turn_tokens_are_the_tokenizer_s(built: Bank, tokenizer: Any) -> None:
    view = load("casino", split="valid").examples("turns").tokenize(tokenizer, max_length=8)
    for x in view[:40]:
        ids = tokenizer(x["text"])["input_ids"][:8]
        assert x["input_ids"] == ids and x["attention_mask"] == [1] * len(ids)
    assert view[0]["labels"] == ["strategy:small-talk"]  # a turn's labels stay its names


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("max_length", [3, 8])
def test_a_cut_text_keeps_the_tokenizer_s_special_tokens(
    built: Bank, tokenizer: Any, side: str, max_length: int
) -> None:
    """A text longer than ``max_length`` is cut as the tokenizer's own truncation cuts it: a
    BERT-like tokenizer's ``[CLS]`` and ``[SEP]`` stay, the text's tokens go on the
    truncation side (before: the ids were cut after them, the last ``[SEP]`` gone on the
    right and the ``[CLS]`` on the left, 2 of 2 sides)."""
    from tokenizers import processors

    bert = copy.deepcopy(tokenizer)
    cls, sep = bert.convert_tokens_to_ids(["<s>", "</s>"])
    bert.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", cls), ("</s>", sep)]
    )
    view = load("casino", split="valid").examples("turns")[:60]
    made = view.tokenize(bert, max_length=max_length, truncation_side=side)
    bert.truncation_side = side
    cut = 0
    for x in made:
        ids = bert(x["text"], truncation=True, max_length=max_length)["input_ids"]
        assert x["input_ids"] == ids and ids[0] == cls and ids[-1] == sep and len(ids) <= max_length
        cut += len(bert(x["text"])["input_ids"]) > max_length
    assert cut >= 30  # most were cut
    with pytest.raises(
        TokenizerError,
        match=r"^max_length 1 leaves no room for a text beside the tokenizer's 2 special tokens$",
    ):
        view.tokenize(bert, max_length=1)[0]


def test_response_labels_are_exactly_the_response(built: Bank, tokenizer: Any) -> None:
    view = load("convai2", "volunteers").examples("responses", history=3).tokenize(tokenizer)
    for x in view[:60]:
        assert len(x["input_ids"]) == len(x["labels"]) == len(x["attention_mask"])
        learned = [i for i, lab in zip(x["input_ids"], x["labels"], strict=True) if lab != IGNORE_INDEX]
        assert learned == tokenizer(f"{x['response']} </s> ", add_special_tokens=False)["input_ids"]
        rendered = tokenizer.apply_chat_template(x["messages"], tokenize=False)
        assert x["input_ids"] == tokenizer(rendered, add_special_tokens=False)["input_ids"]
        first = x["labels"].index(learned[0]) if learned else len(x["labels"])
        assert set(x["labels"][:first]) <= {IGNORE_INDEX}


def test_a_chat_trains_every_assistant_message(built: Bank, tokenizer: Any) -> None:
    x = load("casino", split="valid").examples("chat").tokenize(tokenizer)[0]
    learned = [i for i, lab in zip(x["input_ids"], x["labels"], strict=True) if lab != IGNORE_INDEX]
    mine = [m["content"] for m in x["messages"] if m["role"] == "assistant"]
    expected = [i for text in mine for i in tokenizer(f"{text} </s> ", add_special_tokens=False)["input_ids"]]
    assert learned == expected


def test_histories_are_cut_from_the_left_keeping_the_response(built: Bank, tokenizer: Any) -> None:
    whole = load("casino").examples("responses", history=None).tokenize(tokenizer)
    cut = load("casino").examples("responses", history=None).tokenize(tokenizer, max_length=32)
    x, y = whole[300], cut[300]
    assert (
        len(x["input_ids"]) > 32
        and y["input_ids"] == x["input_ids"][-32:]
        and y["labels"] == x["labels"][-32:]
    )
    right = (
        load("casino")
        .examples("responses", history=None)
        .tokenize(tokenizer, max_length=32, truncation_side="right")
    )
    assert right[300]["input_ids"] == x["input_ids"][:32]


def test_no_template_is_an_error_that_says_what_to_do(built: Bank, tokenizer: Any) -> None:
    bare = _tokenizer(["hello there"], template=None)
    with pytest.raises(TokenizerError) as found:
        load("casino").examples("chat").tokenize(bare, template=True)
    assert str(found.value) == (
        "the tokenizer 'TokenizersBackend' has no chat template; set tokenizer.chat_template, "
        "or pass template=False to join the messages as 'role: content' lines"
    )
    plain = load("casino", split="valid").examples("responses", history=1).tokenize(bare)[0]
    assert bare.decode(plain["input_ids"]).startswith("[UNK]")  # 'system: ...' lines, words unknown


def test_a_callable_tokenizer(built: Bank) -> None:
    view = (
        load("casino", split="valid").examples("turns").tokenize(lambda text: [len(w) for w in text.split()])
    )
    assert view[0]["input_ids"] == [len(w) for w in view[0]["text"].split()]
    with pytest.raises(TokenizerError, match="a callable tokenizer must return a list of token ids"):
        load("casino").examples("turns").tokenize(lambda text: text)[0]


# ---------------------------------------------------------------------- map and its cache
Calls = types.ModuleType("calls")
"""How often ``_words`` ran, in ``Calls.n`` (a module: its fingerprint is its name, not its
state; a global list, or a class's attribute, would be hashed by its content and change the
fingerprint with each call)."""
Calls.n = 0


def _words(example: dict[str, Any]) -> dict[str, Any]:
    Calls.n += 1
    return {"words": len(example["text"].split())}


def test_map_results_are_cached_and_reused(built: Bank) -> None:
    view = load("casino", split="valid").examples("turns")
    Calls.n = 0
    first = view.map(_words)
    assert Calls.n == 402 and first["words"][:3] == [19, 10, 19]
    again = view.map(_words)
    assert Calls.n == 402 and again.to_arrow().equals(first.to_arrow())
    assert view.map(_words, cache=False)["words"] == first["words"] and Calls.n == 804
    batched = view.map(lambda b: {"n": [len(t) for t in b["text"]]}, batched=True, batch_size=50)
    assert batched["n"] == [len(t) for t in view["text"]]
    in_two = view.map(lambda t: {"n": len(t["text"])}, num_proc=2, cache=False)
    assert in_two["n"] == batched["n"] and in_two.column_names == [*view.column_names, "n"]


def test_map_cache_is_reused_by_another_process_and_renewed_by_a_rebuild(
    casino_home: Bank, tmp_path: Path
) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, convbank
            calls = []
            def lengths(t):
                calls.append(1)
                return {"n": len(t["text"])}
            convbank.load("casino", split="valid").examples("turns").map(lengths)
            print(len(calls))
            """
        )
    )

    def run() -> str:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    assert run() == "402"
    assert run() == "0"  # another process: read from the cache

    build(["casino"], fetcher=Fetcher(sources=[SHARED], verify=False, progress=False), bank=casino_home)
    assert run() == "402"  # a new generation: a new entry
    folders = list((casino_home.root.with_name("bank-cache") / "map" / "casino").iterdir())
    assert len(folders) == 1  # the old generation's entries went with it


@pytest.mark.parametrize(
    ("removed", "expected"),
    [
        (
            ["txt"],
            "these examples have no column 'txt'; did you mean text? columns: dataset, config, split, "
            "conversation_id, turn_index, participant_id, role, text, kind, labels",
        ),
        (
            ["text", "nope"],
            "these examples have no column 'nope'; columns: dataset, config, split, "
            "conversation_id, turn_index, participant_id, role, text, kind, labels",
        ),
        (
            "text",
            [
                "dataset",
                "config",
                "split",
                "conversation_id",
                "turn_index",
                "participant_id",
                "role",
                "kind",
                "labels",
                "n",
            ],
        ),
    ],
)
def test_map_s_remove_columns_names_columns_of_the_view(built: Bank, removed: Any, expected: Any) -> None:
    """``map(remove_columns=...)`` takes columns of the view, one name or a list, as Hugging
    Face's: a name the view has not is an error naming its columns (before: ignored, the
    column kept without a word, 2 of 2 lists; and ``"text"`` was read as the letters t, e, x,
    t and removed nothing)."""
    view = load("casino", split="valid").examples("turns")
    if isinstance(expected, str):
        with pytest.raises(UnknownFieldError) as caught:
            view.map(lambda t: {"n": 1}, remove_columns=removed, cache=False)
        assert str(caught.value).strip('"') == expected
        return
    assert view.map(lambda t: {"n": 1}, remove_columns=removed, cache=False).column_names == expected


@pytest.mark.parametrize("batched", [False, True])
def test_map_of_no_examples_keeps_the_view_s_columns(built: Bank, batched: bool) -> None:
    """``map`` over a view of no examples (nothing to call the function on) has the view's
    columns and types, less those removed, as Hugging Face's (before: a table of 0 columns,
    2 of 2 ways)."""
    view = load("casino", split="valid").examples("turns").filter(lambda t: False)
    schema = view.to_arrow().schema
    made = view.map(lambda t: {"n": 1}, batched=batched, cache=False)
    assert made.to_arrow().schema == schema and len(made) == 0 and made["text"] == []
    kept = view.map(lambda t: {"n": 1}, batched=batched, remove_columns=["text", "labels"], cache=False)
    assert kept.column_names == [n for n in schema.names if n not in ("text", "labels")]


def test_a_function_that_does_not_return_a_dict_is_said(built: Bank) -> None:
    view = load("casino", split="valid").examples("turns")
    with pytest.raises(
        MapError, match="map\\(\\)'s function returned int for example 0; it must return a dict"
    ):
        view.map(lambda t: 1, cache=False)
    with pytest.raises(MapError, match="returned 1 row for a batch of 402; to change the number of rows"):
        view.map(lambda b: {"n": [1]}, batched=True, batch_size=1000, cache=False)


def test_corpus_map_gets_conversations(built: Bank) -> None:
    corpus = load("casino", split="valid")
    table = corpus.map(lambda c: {"id": c.conversation_id, "turns": c.num_turns})
    assert table["id"] == corpus.conversation_ids()
    assert table["turns"] == [c.num_turns for c in corpus]


PROCESSES = """
import os, sys, threading, warnings, convbank
view = convbank.load("casino", split="valid").examples("turns")
if sys.argv[1] == "duckdb":  # an open DuckDB database: no fork, the lambda goes by cloudpickle
    convbank.sql("SELECT 1")
lock = threading.Lock()
if sys.argv[1] == "unpicklable":  # a lock pickles nowhere: computed here, with a warning
    convbank.sql("SELECT 1")
    fn = lambda t: {"pid": os.getpid(), "held": lock.locked()}
else:
    fn = lambda t: {"pid": os.getpid()}
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    pids = set(view.map(fn, num_proc=2, cache=False)["pid"])
print(len(pids), os.getpid() in pids, len(said), said[0].message if said else "")
"""


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("fork", "2 False 0 "),
        ("duckdb", "2 False 0 "),
        ("unpicklable", "1 True 1 map(num_proc=...) computes in this process: it cannot fork here"),
    ],
)
def test_map_in_processes(built: Bank, tmp_path: Path, how: str, expected: str) -> None:
    script = tmp_path / "processes.py"
    script.write_text(PROCESSES)
    done = subprocess.run([sys.executable, str(script), how], capture_output=True, text=True, check=True)
    assert done.stdout.startswith(expected)
