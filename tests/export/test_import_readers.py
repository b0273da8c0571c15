"""The readers of ``convbank import``, each on what real files do (a byte-order mark, CRLF,
no final newline, non-ASCII text, a published corpus written by the format's own library) and
on bad input: each bad record a :class:`Rejected` naming the file, where and what was
expected, never an exception, the good records around it still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import convbank
from convbank.export import export
from convbank.export._format import ReadOptions, Rejected
from convbank.export._registry import formats, read
from convbank.export.table import read_frame
from convbank.model import Conversation
from convbank.store import Bank

OPTIONS = ReadOptions(dataset="mine")


def _read(fmt: str, paths: list[Path], options: ReadOptions = OPTIONS) -> list[Conversation | Rejected]:
    reader = formats.get(fmt).reader
    assert reader is not None
    return list(reader(paths, options))


def _turns(conv: Conversation | Rejected) -> list[tuple[str, str]]:
    assert isinstance(conv, Conversation), conv
    return [(t.participant_id, t.text) for t in conv.turns]


def _lines(item: Conversation | Rejected) -> str:
    assert isinstance(item, Rejected), item
    return item.line()


def test_the_readers_are_registered() -> None:
    assert set(read()) >= {"hf", "convokit", "parlai", "jsonl", "parquet", "table"}
    assert formats.get("table").writer is None


MINE = ("hf", "convokit", "parlai", "jsonl", "parquet", "table")


@pytest.mark.parametrize(
    ("fmt", "sniffed"),
    [
        ("hf", "hf"),
        ("convokit", "convokit"),
        ("parlai", "parlai"),
        ("jsonl", "jsonl"),
        ("parquet", "parquet"),
        ("csv", "table"),
    ],
)
def test_each_export_is_recognised_by_its_reader_alone(
    built: Bank, tmp_path: Path, fmt: str, sniffed: str
) -> None:
    paths = export(convbank.load("ccpe"), fmt, tmp_path)
    assert [f for f in MINE if formats.get(f).sniff(paths)] == [sniffed]  # type: ignore[misc]


# ---------------------------------------------------------------- jsonl and parquet (convbank's own)
CONV = {
    "dataset": "x",
    "config": "c1",
    "split": "valid",
    "conversation_id": "k1",
    "source_index": 3,
    "participants": [{"participant_id": "a", "role": "user"}],
    "turns": [{"turn_index": 0, "participant_id": "a", "text": "naïve café\n☕"}],
}


def test_jsonl_reads_bom_crlf_no_final_newline_and_rejects_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    bad_type = {**CONV, "conversation_id": 7}
    lines = [
        json.dumps(CONV),
        "{not json",
        json.dumps(bad_type),
        json.dumps({**CONV, "conversation_id": "k2"}),
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    first, broken, wrong, last = _read("jsonl", [path])
    assert isinstance(first, Conversation) and isinstance(last, Conversation)
    assert (first.dataset, first.config, first.split, first.source_index) == ("mine", "c1", "valid", 3)
    assert _turns(first) == [("a", "naïve café\n☕")] and last.conversation_id == "k2"
    assert (
        _lines(broken)
        == "x.jsonl, line 2: expected JSON (JSON is malformed: object keys must be strings (byte 1))"
    )
    assert _lines(wrong) == (
        "x.jsonl, line 3: expected a unified conversation (Expected `str`, got `int` - at `$.conversation_id`)"
    )
    sniff = formats.get("jsonl").sniff
    assert sniff is not None and sniff([path]) is True
    path.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    assert sniff([path]) is False


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ({**CONV, "zzz": 1}, "a key 'zzz' it has no place for"),
        ({**CONV, "turns": [{**CONV["turns"][0], "zzz": 1}]}, "a key 'turns[0].zzz' it has no place for"),  # type: ignore[index]
        (
            {**CONV, "participants": [{"participant_id": "a", "role": "user", "age": 3}]},
            "a key 'participants[0].age' it has no place for",
        ),
        ({**CONV, "num_turns": 2}, "num_turns 2 where it has 1 turn"),
    ],
    ids=["conversation", "turn", "participant", "num_turns"],
)
def test_jsonl_refuses_what_a_conversation_has_no_place_for(
    tmp_path: Path, line: dict[str, object], said: str
) -> None:
    """``jsonl`` loses nothing, so a key the unified model has no place for is a bad line,
    never dropped (before: imported without it, exit 0, 3 of 3 places), and so is a
    ``num_turns`` that is not the count of the line's turns; the line as written is read."""
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({**CONV, "num_turns": 1}) + "\n" + json.dumps(line) + "\n")
    read, refused = _read("jsonl", [path])
    assert isinstance(read, Conversation)
    assert _lines(refused) == f"x.jsonl, line 2: expected a unified conversation ({said})"


def test_parquet_needs_its_tables_and_rejects_a_turn_of_no_conversation(tmp_path: Path) -> None:
    import msgspec
    import pyarrow.parquet as pq

    from convbank.model import schema
    from convbank.model.types import Conversation as Conv

    conv = msgspec.convert(CONV, Conv)
    tables = schema.conversations_to_tables([conv])
    for name, table in tables.items():
        pq.write_table(table, tmp_path / f"x_{name}.parquet")
    assert [c.conversation_id for c in _read("parquet", [tmp_path])] == ["k1"]  # type: ignore[union-attr]
    stray = schema.conversations_to_tables([msgspec.convert({**CONV, "conversation_id": "zz"}, Conv)])[
        "turns"
    ]
    import pyarrow as pa

    pq.write_table(pa.concat_tables([tables["turns"], stray]), tmp_path / "x_turns.parquet")
    got = _read("parquet", [tmp_path])
    assert isinstance(got[0], Conversation)
    assert _lines(got[1]) == (
        "x_turns.parquet, row 2: expected a row of a conversation of the conversations table, in its order "
        "(conversation 'zz')"
    )
    (tmp_path / "x_conversations.parquet").unlink()
    assert [_lines(g) for g in _read("parquet", [tmp_path])] == [
        "x_annotations.parquet, file: expected the unified conversations table (<dataset>_conversations.parquet)"
    ]


# ---------------------------------------------------------------- convokit
def _utterance(uid: str, conv: str, speaker: str, text: str, reply: str | None, **extra: Any) -> str:
    return json.dumps(
        {
            "id": uid,
            "conversation_id": conv,
            "speaker": speaker,
            "text": text,
            "reply-to": reply,
            "meta": {},
            **extra,
        }
    )


def _corpus(folder: Path, lines: list[str]) -> Path:
    folder.mkdir()
    (folder / "utterances.jsonl").write_text("\n".join(lines), encoding="utf-8")
    (folder / "speakers.json").write_text('{"ana": {"meta": {"age": 30}}, "ben": {"meta": {}}}')
    (folder / "conversations.json").write_text('{"c1": {"meta": {"topic": "t"}}}')
    (folder / "corpus.json").write_text('{"name": "tiny"}')
    return folder


def test_convokit_keeps_a_tree_timestamps_and_meta(tmp_path: Path) -> None:
    folder = _corpus(
        tmp_path / "corpus",
        [
            _utterance("u1", "c1", "ana", "¿Qué tal?", None, timestamp=100),
            _utterance("u2", "c1", "ben", "Bien", "u1", timestamp=101),
            _utterance("u3", "c1", "ana", "A branch", "u1"),
            _utterance("v1", "c2", "ben", "Alone", None),
        ],
    )
    first, second = _read("convokit", [folder])
    assert isinstance(first, Conversation) and isinstance(second, Conversation)
    assert _turns(first) == [("ana", "¿Qué tal?"), ("ben", "Bien"), ("ana", "A branch")]
    assert [t.meta for t in first.turns] == [
        {"utterance_id": "u1", "timestamp": 100},
        {"utterance_id": "u2", "timestamp": 101, "reply_to": 0},
        {"utterance_id": "u3", "reply_to": 0},
    ]
    assert [(p.participant_id, p.meta) for p in first.participants] == [("ana", {"age": 30}), ("ben", {})]
    assert first.meta == {"topic": "t", "corpus": {"name": "tiny"}}
    assert (second.conversation_id, second.source_index, second.meta) == (
        "c2",
        1,
        {"corpus": {"name": "tiny"}},
    )


def test_convokit_rejects_what_points_nowhere_repeated_ids_and_what_is_not_a_corpus(tmp_path: Path) -> None:
    folder = _corpus(
        tmp_path / "corpus",
        [
            _utterance("u1", "c1", "ana", "hi", "nowhere"),
            _utterance("w1", "c3", "ana", "other", None),
            '{"id": "u9", "conversation_id": "c1", "speaker": "ana"}',
            "[1, 2",
            _utterance("x1", "c4", "ana", "one", None),
            _utterance("x1", "c4", "ben", "another with its id", "x1"),
            _utterance("y1", "c5", "ana", "said twice", None),
            _utterance("y1", "c5", "ana", "said twice", None),
        ],
    )
    got = _read("convokit", [folder])
    assert [_lines(g) for g in got if isinstance(g, Rejected)] == [
        "utterances.jsonl, line 4: expected JSON (Input data was truncated)",
        "utterances.jsonl, line 3: expected a string 'text'",
        "utterances.jsonl, line 1: expected a reply-to inside conversation 'c1', not 'nowhere'",
        "utterances.jsonl, line 6: expected utterance id 'x1' used once in 'c4'",
    ]
    kept = [c for c in got if isinstance(c, Conversation)]
    assert [(c.conversation_id, _turns(c)) for c in kept] == [
        ("c3", [("ana", "other")]),
        ("c5", [("ana", "said twice")]),  # an exact duplicate left out
    ]
    assert [_lines(g) for g in _read("convokit", [tmp_path / "empty"])] == [
        "empty, file: expected a ConvoKit corpus folder holding utterances.jsonl"
    ]


def test_convokit_gathers_conversations_whose_utterances_are_scattered(tmp_path: Path) -> None:
    """ConvoKit corpora built from time-ordered dumps (Reddit's) interleave conversations:
    each is gathered whole, in the order it first appears, its turns in the file's order."""
    folder = _corpus(
        tmp_path / "corpus",
        [
            _utterance("a1", "c1", "ana", "first", None),
            _utterance("b1", "c2", "ben", "other thread", None),
            _utterance("a2", "c1", "ben", "reply", "a1"),
            _utterance("b2", "c2", "ana", "reply there", "b1"),
            _utterance("a3", "c1", "ana", "branch", "a1"),
        ],
    )
    got = _read("convokit", [folder])
    assert all(isinstance(c, Conversation) for c in got)
    assert [(c.conversation_id, c.source_index, _turns(c)) for c in got] == [
        ("c1", 0, [("ana", "first"), ("ben", "reply"), ("ana", "branch")]),
        ("c2", 1, [("ben", "other thread"), ("ana", "reply there")]),
    ]
    assert [t.meta.get("reply_to") for t in got[0].turns] == [None, 0, 0]

    # as real files hold them: a byte-order mark, CRLF line ends, blank lines inside a
    # conversation's run, no final newline; a line that is not JSON named by its number
    utterances = folder / "utterances.jsonl"
    lines = utterances.read_text(encoding="utf-8").split("\n")
    text = "\ufeff" + "\r\n".join([lines[0], "", lines[1], "   ", lines[2], "{not json", *lines[3:]])
    utterances.write_bytes(text.encode("utf-8"))
    again = _read("convokit", [folder])
    assert isinstance(again[0], Rejected)
    assert (again[0].where, again[0].expected[:13]) == ("line 6", "expected JSON")
    assert [(c.conversation_id, _turns(c)) for c in again[1:]] == [
        (c.conversation_id, _turns(c)) for c in got
    ]


def test_convokit_reads_a_corpus_convokit_dumped(tmp_path: Path) -> None:
    convokit = pytest.importorskip("convokit")
    ana, ben = convokit.Speaker(id="ana", meta={"age": 30}), convokit.Speaker(id="ben")
    utterances = [
        convokit.Utterance(
            id="u1", speaker=ana, conversation_id="u1", reply_to=None, text="Hola", timestamp=1
        ),
        convokit.Utterance(
            id="u2", speaker=ben, conversation_id="u1", reply_to="u1", text="Bien", timestamp=2
        ),
        convokit.Utterance(
            id="u3", speaker=ana, conversation_id="u1", reply_to="u1", text="Otra", timestamp=3
        ),
    ]
    corpus = convokit.Corpus(utterances=utterances)
    corpus.get_conversation("u1").meta["topic"] = "greetings"
    corpus.dump("tiny", base_path=str(tmp_path))
    assert formats.get("convokit").sniff([tmp_path / "tiny"]) is True  # type: ignore[misc]
    (conv,) = _read("convokit", [tmp_path / "tiny"])
    assert isinstance(conv, Conversation)
    assert _turns(conv) == [("ana", "Hola"), ("ben", "Bien"), ("ana", "Otra")]
    assert [t.meta for t in conv.turns] == [
        {"utterance_id": "u1", "timestamp": 1},
        {"utterance_id": "u2", "timestamp": 2, "reply_to": 0},
        {"utterance_id": "u3", "timestamp": 3, "reply_to": 0},
    ]
    assert conv.meta["topic"] == "greetings" and conv.participants[0].meta == {"age": 30}


# ---------------------------------------------------------------- parlai
def test_parlai_reads_escapes_colons_and_episodes(tmp_path: Path) -> None:
    path = tmp_path / "task.txt"
    lines = [
        "text:your persona: i like tea.\\nhi: how are you?\tlabels:fine\\tthanks|good\tid:mine/e1\treward:1",
        "text:and you?\tlabels:time: 10:30\tepisode_done:True",
        "text:second\tlabels:ok",  # the file ends without episode_done
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    assert formats.get("parlai").sniff([path]) is True  # type: ignore[misc]
    first, second = _read("parlai", [path])
    assert isinstance(first, Conversation) and isinstance(second, Conversation)
    assert _turns(first) == [
        ("user", "hi: how are you?"),
        ("assistant", "fine\tthanks"),
        ("user", "and you?"),
        ("assistant", "time: 10:30"),
    ]
    assert first.conversation_id == "e1" and first.participant("assistant").persona == ["i like tea."]
    assert first.turns[1].meta == {"reward": "1", "labels": ["fine\tthanks", "good"]}
    assert (second.conversation_id, _turns(second)) == ("1", [("user", "second"), ("assistant", "ok")])


def test_parlai_episodes_end_where_parlais_own_reader_ends_them(tmp_path: Path) -> None:
    """ParlAI's ``str_to_msg`` (1.7.2) takes ``episode_done`` as ``bool`` of its text: any
    value but an empty one ends the episode, ``False`` too (before: only
    ``episode_done:True``, so ``true`` and ``1`` ran episodes together). A line giving it
    twice is refused (a field given twice: ``test_a_parlai_field_given_twice_is_refused``)."""
    path = tmp_path / "task.txt"
    path.write_text(
        "text:a\tlabels:b\tepisode_done:true\n"
        "text:c\tlabels:d\tepisode_done:\n"
        "text:e\tlabels:f\tepisode_done:False\n"
        "text:g\tlabels:h\tepisode_done:\n"
        "text:i\tlabels:j\tepisode_done:1\n"
        "text:k\tlabels:l\n"
    )
    got = _read("parlai", [path])
    assert [[t.text for t in c.turns] for c in got] == [  # type: ignore[union-attr]
        ["a", "b"],
        ["c", "d", "e", "f"],
        ["g", "h", "i", "j"],
        ["k", "l"],
    ]


def test_a_parlai_field_given_twice_is_refused(tmp_path: Path) -> None:
    """Twentieth pass. Before: a line giving a field twice (``text``, ``labels``, an extra
    one, ``episode_done``) was imported with the last value, the first dropped without a
    word (ParlAI's reader keeps the last), where a JSON record giving a key twice is refused
    (4 of 4 fields). Now it is refused naming its line and the field, its episode with it,
    as any bad line; ``--skip-bad`` imports the rest."""
    path = tmp_path / "task.txt"
    path.write_text(
        "text:a\tlabels:b\ttext:lost?\n"
        "text:c\tlabels:d\tepisode_done:True\n"
        "text:e\tlabels:f\tr:1\tr:2\tepisode_done:True\n"
        "text:g\tlabels:h\tepisode_done:True\tepisode_done:\n"
        "text:i\tlabels:j\tepisode_done:True\n"
    )
    got = _read("parlai", [path])
    said = "expected each field of a line once (the field {!r} is given twice; a reader would keep the last alone)"
    assert [_lines(g) for g in got[:3]] == [
        f"task.txt, line {n}: " + said.format(field)
        for n, field in [(1, "text"), (3, "r"), (4, "episode_done")]
    ]
    assert got[0].takes == (  # type: ignore[union-attr]
        "; its episode, to the next line that ends one (an episode_done of any value), is left out with it"
    )
    assert len(got) == 4 and _turns(got[3]) == [("user", "i"), ("assistant", "j")]


def test_parlai_rejects_a_field_without_key_and_drops_its_episode(tmp_path: Path) -> None:
    path = tmp_path / "task.txt"
    path.write_text(
        "text:a\tlabels:b\nno colon here\tlabels:c\nepisode_done:True\ntext:x\tlabels:y\tepisode_done:True\n"
    )
    got = _read("parlai", [path])
    assert _lines(got[0]) == "task.txt, line 2: expected tab-separated key:value fields, not 'no colon here'"
    assert got[0].takes == (
        "; its episode, to the next line that ends one (an episode_done of any value), is left out with it"
    )
    assert (
        _lines(got[1])
        == "task.txt, line 3: expected a text: or labels: field (ParlAI's tab-separated key:value fields)"
    )
    assert got[1].takes == "; the episode it ends is left out with it"
    assert len(got) == 3 and _turns(got[2]) == [("user", "x"), ("assistant", "y")]


# ---------------------------------------------------------------- table
def test_table_maps_columns_keeps_the_rest_typed_and_orders_by_turn(tmp_path: Path) -> None:
    path = tmp_path / "turns.csv"
    rows = [
        "dialog,who,utt,n,when,score",
        'd1,ana,"Hi, there",5,2024-01-01,0.5',
        "d1,ben,¡Hola!,2,2024-01-02,1.5",
        'd2,ana,"two\nlines",0,2024-01-03,',
    ]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(rows).encode())
    mapping = {"conversation_id": "dialog", "speaker": "who", "text": "utt", "turn": "n", "timestamp": "when"}
    d1, d2 = _read("table", [path], ReadOptions(dataset="mine", mapping=mapping))
    assert isinstance(d1, Conversation) and isinstance(d2, Conversation)
    assert _turns(d1) == [("ben", "¡Hola!"), ("ana", "Hi, there")] and _turns(d2) == [("ana", "two\nlines")]
    assert [t.meta for t in d1.turns] == [
        {"score": 1.5, "timestamp": "2024-01-02", "n": 2},
        {"score": 0.5, "timestamp": "2024-01-01", "n": 5},
    ]
    assert d2.turns[0].meta == {"score": None, "timestamp": "2024-01-03"}
    tsv = tmp_path / "turns.tsv"
    tsv.write_text("conversation_id\tparticipant_id\ttext\nc\tx\ta: b\n")
    assert [_turns(c) for c in _read("table", [tsv])] == [[("x", "a: b")]]


def test_table_rejects_missing_columns_scattered_rows_and_repeated_turns(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("dialog,text\nd1,hi\n")
    assert [_lines(g) for g in _read("table", [path])] == [
        "t.csv, file: expected a column 'conversation_id' (conversation_id; name it with --map "
        "conversation_id=COLUMN), the file's columns: dialog, text"
    ]
    path.write_text(
        "conversation_id,participant_id,text,turn_index\nd1,a,x,0\nd2,a,y,0\nd1,a,z,1\nd3,a,p,0\nd3,b,q,0\n"
    )
    got = _read("table", [path])
    assert [c.conversation_id for c in got if isinstance(c, Conversation)] == ["d1", "d2"]
    assert [_lines(g) for g in got if isinstance(g, Rejected)] == [
        "t.csv, row 4: expected the rows of conversation 'd1' together (sort the table by conversation)",
        "t.csv, row 6: expected a distinct 'turn_index' in each row of conversation 'd3'",
    ]


def test_table_reads_parquet_and_data_frames(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"dialog": ["a", "a"], "who": ["u", "v"], "said": ["hi", "yo"], "n": [1, 2]})
    mapping = {"conversation_id": "dialog", "speaker": "who", "text": "said"}
    options = ReadOptions(dataset="mine", mapping=mapping)
    (conv,) = read_frame(frame, options)
    assert isinstance(conv, Conversation)
    assert _turns(conv) == [("u", "hi"), ("v", "yo")] and [t.meta for t in conv.turns] == [{"n": 1}, {"n": 2}]
    frame.to_parquet(tmp_path / "t.parquet")
    assert [_turns(c) for c in _read("table", [tmp_path / "t.parquet"], options)] == [_turns(conv)]
    pl = pytest.importorskip("polars")
    assert [_turns(c) for c in read_frame(pl.from_pandas(frame), options)] == [_turns(conv)]
    bad = pd.DataFrame({"dialog": ["a", None], "who": ["u", "v"], "said": ["hi", "yo"]})
    assert [_lines(g) for g in read_frame(bad, options) if isinstance(g, Rejected)] == [
        "DataFrame, row 2: expected a conversation id"
    ]


# ---------------------------------------------------------------- hf
def test_hf_reads_a_saved_dataset_with_a_messages_column(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = {
        "id": ["r1", "r2"],
        "messages": [
            [{"role": "system", "content": "be kind"}, {"role": "user", "content": "¿hola?"}],
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}],
        ],
        "source": ["web", "app"],
    }
    datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "dd"))
    datasets.Dataset.from_dict({"text": ["no messages"]}).save_to_disk(str(tmp_path / "plain"))
    assert formats.get("hf").sniff([tmp_path / "dd"]) is True  # type: ignore[misc]
    r1, r2 = _read("hf", [tmp_path / "dd"])
    assert isinstance(r1, Conversation) and isinstance(r2, Conversation)
    assert _turns(r1) == [("system", "be kind"), ("user", "¿hola?")] and _turns(r2)[1] == ("assistant", "")
    assert (r1.conversation_id, r1.split, r1.meta) == ("r1", "test", {"source": "web"})
    assert [_lines(g) for g in _read("hf", [tmp_path / "plain"])] == [
        "plain, file: expected a messages-like column (messages, conversations, conversation, dialog, dialogue, "
        "turns, utterances); its columns: text"
    ]


@pytest.mark.parametrize("kind", ["DatasetDict", "IterableDatasetDict", "saved"])
def test_a_hugging_face_dataset_dict_of_rows_without_ids_imports_every_split(
    tmp_path: Path, kind: str
) -> None:
    """Before: a ``DatasetDict`` of two splits whose rows name no id was refused (``conversation
    '0': expected a conversation id used once``: each split numbered its rows from 0), in
    memory or saved, and an ``IterableDatasetDict`` was read as one dataset whose columns were
    its splits (3 of 3). Now a row of no id is numbered after its split (``test-0``)."""
    import datasets

    rows = [{"messages": [{"role": "user", "content": "hi"}]}]
    both = {"train": datasets.Dataset.from_list(rows), "test": datasets.Dataset.from_list(rows * 2)}
    data: Any = datasets.DatasetDict(both)
    if kind == "IterableDatasetDict":
        data = datasets.IterableDatasetDict({k: v.to_iterable_dataset() for k, v in both.items()})
    elif kind == "saved":
        data.save_to_disk(str(tmp_path / "saved"))
        data = tmp_path / "saved"
    report = convbank.import_conversations(data, name="mine")
    assert report.parts == {"default/train": 1, "default/test": 2}
    assert sorted(c.conversation_id for c in convbank.load("mine")) == ["test-0", "test-1", "train-0"]
    convbank.import_conversations(both["test"], name="one")
    assert [c.conversation_id for c in convbank.load("one")] == ["0", "1"]


@pytest.mark.parametrize("kind", ["Series", "LazyFrame", "Features"])
def test_other_objects_of_pandas_polars_and_datasets_are_named_never_read(kind: str) -> None:
    """Before: a pandas ``Series``, a polars ``LazyFrame`` or a ``datasets.Features`` was read
    as a table or a dataset and failed with an ``AttributeError`` traceback (3 of 3)."""
    import datasets
    import pandas as pd
    import polars as pl

    given = {
        "Series": lambda: pd.Series([1]),
        "LazyFrame": lambda: pl.DataFrame({"a": [1]}).lazy(),
        "Features": lambda: datasets.Features({"a": datasets.Value("string")}),
    }[kind]()
    with pytest.raises(TypeError) as caught:
        convbank.import_conversations(given, name="mine")
    package = type(given).__module__.split(".")[0]
    assert str(caught.value) == (
        "an import takes a path, several, {split: path(s)}, a DataFrame or a Hugging Face "
        f"Dataset, not {package} {kind}"
    )
