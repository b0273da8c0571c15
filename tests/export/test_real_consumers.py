"""Exports, each loaded by its real consumer: Hugging Face datasets, ConvoKit, mlcroissant;
ParlAI's text format parsed by ParlAI's rules; chat JSONL from either side; ShareGPT JSONL
through ``datasets.load_dataset("json")``, as the fine-tuning tools that read it do."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import datasets
import mlcroissant
import pytest
from click.testing import CliRunner
from convokit import Corpus as ConvoKitCorpus

from convbank.cli import cli
from convbank.errors import ExportError, MissingExtraError
from convbank.export import FORMATS, export, formats
from convbank.export.chat import chat_record
from convbank.export.hf import features, hf_record, to_hf
from convbank.query import load
from convbank.store import Bank
from testsupport import ALL_COUNTS

DATASETS = sorted({d for d, _ in ALL_COUNTS})
WITHOUT_EXTRAS = [f.name for f in formats if f.extra is None and f.plan is not None]
"""The formats every dataset is exported to here: those that need no extra (``hf`` and
``croissant`` have their own tests below), less ``source`` (checked against the published files)."""


SHAREGPT_FROM = {"system": "system", "user": "human", "assistant": "gpt"}
"""ShareGPT's speakers, as LLaMA-Factory's ``sharegpt`` formatting names them."""


def _count(dataset: str) -> int:
    return sum(sum(splits.values()) for (d, _), splits in ALL_COUNTS.items() if d == dataset)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def parlai_message(line: str) -> dict[str, Any]:
    """ParlAI's ``str_to_msg`` rules: tab-separated key:value, \\t \\n __PIPE__ unescaped,
    labels split on |."""
    msg: dict[str, Any] = {}
    for field in line.split("\t"):
        key, _, value = field.partition(":")
        value = value.replace("\\t", "\t").replace("\\n", "\n")
        msg[key] = (
            [v.replace("__PIPE__", "|") for v in value.split("|")]
            if key == "labels"
            else value.replace("__PIPE__", "|")
        )
    return msg


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("fmt", WITHOUT_EXTRAS)
def test_every_dataset_exports_every_conversation(
    built: Bank, tmp_path: Path, dataset: str, fmt: str
) -> None:
    written = export(load(dataset), fmt, tmp_path / "out")
    assert all(p.exists() for p in written)
    corpus = load(dataset)
    n = _count(dataset)
    if fmt in ("jsonl", "chat"):
        records = [r for p in written for r in _lines(p)]
        assert len(records) == n
        if fmt == "chat":
            assert all(r["messages"][0]["role"] == "system" and r["messages"][0]["content"] for r in records)
            assert {r["metadata"]["conversation_id"] for r in records} == {c.conversation_id for c in corpus}
    elif fmt == "csv":
        rows = [row for p in written for row in csv.DictReader(p.open(encoding="utf-8", newline=""))]
        assert len(rows) == sum(c.num_turns for c in corpus)
    elif fmt == "parquet":
        assert {p.name for p in written} == {
            f"{dataset}_{t}.parquet" for t in ("conversations", "participants", "turns", "annotations")
        }
    elif fmt == "convokit":
        (folder,) = written
        kit = ConvoKitCorpus(filename=str(folder))
        assert len(kit.get_conversation_ids()) == sum(1 for c in corpus if c.turns)
        assert len(kit.get_utterance_ids()) == sum(c.num_turns for c in corpus)
    elif fmt == "parlai":
        episodes = [
            line
            for p in written
            for line in p.read_text(encoding="utf-8").splitlines()
            if line.endswith("episode_done:True")
        ]
        messages = [
            parlai_message(line) for p in written for line in p.read_text(encoding="utf-8").splitlines()
        ]
        assert all("text" in m and m["labels"] != [""] for m in messages)
        assert 0 < len(episodes) <= n
    elif fmt == "sharegpt":  # loaded as LLaMA-Factory and Axolotl load ShareGPT files
        rows = datasets.load_dataset("json", data_files=[str(p) for p in written], split="train")
        assert rows.num_rows == n
        chats = {c.conversation_id: chat_record(c)["messages"] for c in corpus}
        for row in rows:
            messages = chats[row["id"]]
            assert [m["from"] for m in row["conversations"]] == [SHAREGPT_FROM[m["role"]] for m in messages]
            assert [m["value"] for m in row["conversations"]] == [m["content"] for m in messages]
    else:
        pytest.fail(f"nothing reads the {fmt} export back here: add its reader to this test")


def test_hf_casino_matches_the_loader_schema_and_values(built: Bank, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["export", "casino", "--format", "hf", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    dd = datasets.load_from_disk(str(tmp_path / "casino" / "default"))
    assert {k: v.num_rows for k, v in dd.items()} == {"train": 900, "valid": 30, "test": 100}
    assert dd["valid"].features == features("casino")
    assert list(dd["train"].features)[:3] == ["chat_logs", "participant_info", "annotations"]
    (row,) = [r for r in dd["valid"] if r["dialogue_id"] == 157]
    assert row["participant_info"]["mturk_agent_1"]["outcomes"]["points_scored"] == 17
    assert row["participant_info"]["mturk_agent_2"]["outcomes"]["points_scored"] == 19
    submit = row["chat_logs"][10]
    assert submit == {
        "text": "Submit-Deal",
        "task_data": {
            "data": None,
            "issue2youget": {"Firewood": "2", "Water": "1", "Food": "1"},
            "issue2theyget": {"Firewood": "1", "Water": "2", "Food": "2"},
        },
        "id": "mturk_agent_1",
    }
    assert row["chat_logs"][11]["task_data"] == {
        "data": "accept_deal",
        "issue2youget": None,
        "issue2theyget": None,
    }
    assert row["annotations"][0] == [
        "Hello there! Are you getting excited for your upcoming trip?! I am so very excited to test my skills!",
        "small-talk",
    ]


def test_hf_keeps_nulls_and_booleans(built: Bank) -> None:
    cur = to_hf(load("curiosity", split="train"))["train"]
    assert cur.features["messages"]["liked"] == datasets.List(datasets.Value("bool"))
    row = next(r for r in cur if r["dialog_id"] == 21922)
    assert row["messages"]["liked"] == [False, True, False, False]
    assert row["messages"]["facts"][1] == {
        "fid": [77870, 77676, 77816],
        "used": [True, False, False],
        "source": [0, 1, 2],
    }
    assert row["messages"]["dialog_acts"][3] == []
    acts = [a for r in cur for a in r["messages"]["dialog_acts"]]
    assert None in acts  # null dialog_acts stay null
    sources = [s for r in cur for f in r["messages"]["facts"] for s in f["source"]]
    assert None in sources  # a fact without source
    assert isinstance(row["inferred_steps"], bool)

    ccpe = to_hf(load("ccpe"))["train"]
    segments = [s for r in ccpe for s in r["utterances"]["segments"]]
    unsegmented = sum("segments" not in t.meta for c in load("ccpe") for t in c.turns)
    assert segments.count(None) == unsegmented > 0
    assert {
        "startIndex": [14],
        "endIndex": [22],
        "text": ["comedies"],
        "annotations": [{"annotationType": [0, 1], "entityType": [0, 0]}],
    } in segments

    convai2 = to_hf(load("convai2", config="volunteers"))["train"]
    scores = convai2["eval_score"]
    assert scores.count(None) == 518 and -1 not in scores
    assert convai2["profile_match"].count(None) == 628
    assert convai2[0]["id"] == "volunteers-00000" and convai2[0]["dialog_id"] is None

    pec = to_hf(load("pec", config="happy"))
    assert set(pec) == {"train", "valid", "test"}  # convbank's names; the folder keeps the loader's
    assert set(to_hf(load("pec", config="happy"), loader_split_names=True)) == {"train", "validation", "test"}
    by_id = {r["conversation_id"]: r for r in pec["train"]}
    conv = load("pec", config="happy")["happy-train-000002"]
    assert by_id["happy-train-000002"]["response_speaker"] == "frank"
    assert by_id["happy-train-000002"]["personas"] == conv.participant("frank").persona
    assert by_id["happy-train-000002"]["context_speakers"] == [t.participant_id for t in conv.turns[:-1]]
    conv.participant("frank").persona = []
    assert hf_record(conv)["personas"] is None


def test_to_hf_of_many_configs_is_a_dataset_dict_per_config(built: Bank) -> None:
    both = to_hf(load("convai2"))
    assert {config: dd["train"].num_rows for config, dd in both.items()} == {
        "intermediate": 291,
        "volunteers": 1111,
    }


def test_convokit_casino_loads_with_all_metadata(built: Bank, tmp_path: Path) -> None:
    (folder,) = export(load("casino"), "convokit", tmp_path)
    kit = ConvoKitCorpus(filename=str(folder))
    assert (len(kit.get_speaker_ids()), len(kit.get_utterance_ids()), len(kit.get_conversation_ids())) == (
        2060,
        14297,
        1030,
    )
    submit = kit.get_utterance("157/10")
    assert submit.text == "Submit-Deal" and submit.reply_to == "157/9"
    assert submit.speaker.id == "157/mturk_agent_1"
    assert submit.meta["task_data"]["issue2youget"] == {"Water": "1", "Firewood": "2", "Food": "1"}
    assert kit.get_utterance("157/0").meta["annotations"] == [
        {"layer": "strategy", "label": "small-talk", "meta": {"slot": 0}}
    ]
    speaker = kit.get_speaker("157/mturk_agent_2")
    assert speaker.meta["outcomes"]["points_scored"] == 19
    assert (
        speaker.meta["demographics"]["age"]
        == kit.get_speaker("157/mturk_agent_2").meta["demographics"]["age"]
    )
    assert kit.get_conversation("157").meta["split"] == "valid"
    assert kit.meta["license"] == "CC-BY-4.0"


@pytest.mark.parametrize(("name", "config"), [("casino", None), ("convai2", "volunteers"), ("pec", "happy")])
def test_convokit_usual_calls(built: Bank, tmp_path: Path, name: str, config: str | None) -> None:
    """What ConvoKit users do first: chronological lists, trees, paths, the DataFrames."""
    corpus = load(name, config)
    (folder,) = export(corpus, "convokit", tmp_path)
    kit = ConvoKitCorpus(filename=str(folder))
    for conv in list(corpus)[:25]:
        kconv = kit.get_conversation(conv.conversation_id)
        chronological = kconv.get_chronological_utterance_list()
        assert [u.text for u in chronological] == [t.text for t in conv.turns]
        assert [u.timestamp for u in chronological] == list(range(len(conv.turns)))
        (path,) = kconv.get_root_to_leaf_paths()  # a chain: one path through every turn
        assert [u.id for u in path] == [f"{conv.conversation_id}/{t.turn_index}" for t in conv.turns]
        assert [u.id for u in kconv.traverse("dfs")] == [u.id for u in path]
        assert kconv.check_integrity(verbose=False)
    utterances = kit.get_utterances_dataframe()
    assert len(utterances) == sum(c.num_turns for c in corpus)
    assert {"timestamp", "text", "speaker", "reply_to", "conversation_id", "meta.kind"} <= set(
        utterances.columns
    )
    speakers = kit.get_speakers_dataframe()
    speaking = {
        (c.conversation_id if name != "pec" else "", t.participant_id) for c in corpus for t in c.turns
    }
    assert len(speakers) == len(speaking)  # ConvoKit keeps the speakers who speak
    conversations = kit.get_conversations_dataframe()
    assert len(conversations) == len(corpus) and (conversations["meta.dataset"] == name).all()


def test_croissant_validates_and_iterates(built: Bank, tmp_path: Path) -> None:
    (folder,) = export(load("casino"), "croissant", tmp_path)
    assert folder.name == "casino_croissant"
    assert sorted(p.name for p in folder.iterdir()) == [
        "annotations.parquet",
        "conversations.parquet",
        "croissant.json",
        "participants.parquet",
        "turns.parquet",
    ]
    jsonld = folder / "croissant.json"
    doc = json.loads(jsonld.read_text(encoding="utf-8"))
    assert doc["license"] == "CC-BY-4.0" and "chawla2021casino" in doc["citeAs"]
    # a list column is described with Croissant 1.1's isArray, so the file says it is 1.1
    # (before: it said 1.0, a version whose vocabulary has no isArray; found by pass 22)
    persona = next(f for rs in doc["recordSet"] for f in rs["field"] if f["@id"] == "participants/persona")
    assert persona["cr:isArray"] is True and doc["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert all(len(d["sha256"]) == 64 for d in doc["distribution"])
    ds = mlcroissant.Dataset(jsonld=str(jsonld))
    turns = list(ds.records(record_set="turns"))
    assert len(turns) == 14297
    first = next(iter(ds.records(record_set="participants")))
    assert first["participants/conversation_id"] == b"938" and len(first["participants/persona"]) == 3


def test_chat_casino_from_either_side(built: Bank, tmp_path: Path) -> None:
    corpus = load("casino", split="valid")
    one = {
        r["metadata"]["conversation_id"]: r for p in export(corpus, "chat", tmp_path / "a") for r in _lines(p)
    }["157"]
    two = {
        r["metadata"]["conversation_id"]: r
        for p in export(corpus, "chat", tmp_path / "b", as_participant="mturk_agent_2")
        for r in _lines(p)
    }["157"]
    assert [m["role"] for m in one["messages"][1:4]] == ["assistant", "user", "assistant"]
    assert [m["role"] for m in two["messages"][1:4]] == ["user", "assistant", "user"]
    assert (
        one["messages"][11]["content"]
        == two["messages"][11]["content"]
        == '[Submit-Deal] {"i_get":{"Food":1,"Water":1,"Firewood":2},"you_get":{"Food":2,"Water":2,"Firewood":1}}'
    )
    assert one["messages"][12] == {"role": "user", "content": "[Accept-Deal]"}
    assert "- High: Firewood (" in one["messages"][0]["content"]
    assert one["messages"][0]["content"] != two["messages"][0]["content"]
    assert one["metadata"]["outcome"]["mturk_agent_1"]["points_scored"] == 17
    assert two["metadata"]["as"] == "mturk_agent_2"


def test_chat_system_messages_carry_private_knowledge(built: Bank, tmp_path: Path) -> None:
    def first(dataset: str, **kw: Any) -> dict[str, Any]:
        return _lines(export(load(dataset, **kw), "chat", tmp_path / dataset)[0])[0]

    convai2 = first("convai2", config="volunteers")
    assert convai2["metadata"]["as"] == "participant2"
    assert convai2["messages"][0]["content"].startswith(
        "Your persona:\n- i like to talk but people have a hard time understanding."
    )
    curiosity = first("curiosity", split="train")
    assert (
        "- [77870] " in curiosity["messages"][0]["content"]
        and "Namibia" in curiosity["messages"][0]["content"]
    )
    pec = first("pec", config="happy", split="train")
    assert pec["metadata"]["role"] == "responder" and pec["messages"][-1]["role"] == "assistant"
    ccpe = first("ccpe")
    assert "movie preferences" in ccpe["messages"][0]["content"] and ccpe["metadata"]["as"] == "ASSISTANT"


def test_where_selects_exactly(built: Bank, tmp_path: Path) -> None:
    corpus = load("convai2")
    written = export(corpus, "jsonl", tmp_path, where="(meta->>'eval_score')::INT >= 4")
    records = [r for p in written for r in _lines(p)]
    assert len(records) == 149 + 20
    assert all(r["meta"]["eval_score"] >= 4 for r in records)
    csv_out = export(load("casino"), "csv", tmp_path / "c", where="conversation_id IN ('157', '938')")
    ids = {row["conversation_id"] for p in csv_out for row in csv.DictReader(p.open(encoding="utf-8"))}
    assert ids == {"157", "938"}
    with pytest.raises(ExportError, match="selects no casino conversation"):
        export(load("casino"), "jsonl", tmp_path / "d", where="num_turns > 1000")
    with pytest.raises(ExportError, match="is not a read-only condition"):
        export(load("casino"), "jsonl", tmp_path / "d", where="1=1; DROP TABLE turns")
    assert not (tmp_path / "d").exists()


def test_csv_keeps_newlines(built: Bank, tmp_path: Path) -> None:
    (path,) = export(load("convai2", config="volunteers"), "csv", tmp_path)
    rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
    assert len(rows) == 14623
    assert any("\n" in r["text"] for r in rows)
    assert {r["role"] for r in rows} == {"human", "bot"}


def test_missing_extra_names_it(built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlcroissant" else real(name, *a)
    )
    with pytest.raises(MissingExtraError) as info:
        export(load("casino"), "croissant", tmp_path)
    assert str(info.value) == (
        "The Croissant export needs the 'mlcroissant' library, which is not installed; "
        "install it with: pip install 'convbank[croissant]'"
    )
    assert not tmp_path.joinpath("casino_croissant").exists()


def test_failed_export_leaves_the_output_as_it_was(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    first = export(load("casino"), "jsonl", out)
    before = {p: p.read_bytes() for p in out.iterdir()}

    def boom(*args: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr("convbank.export.tables._encode", boom)
    with pytest.raises(RuntimeError):
        export(load("casino"), "jsonl", out)  # the same export again: it may replace its own files
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert {p: p.read_bytes() for p in out.iterdir()} == before and len(first) == 3


def test_export_options_are_checked(built: Bank, tmp_path: Path) -> None:
    assert set(FORMATS) == {
        "source",
        "hf",
        "convokit",
        "parlai",
        "chat",
        "sharegpt",
        "jsonl",
        "parquet",
        "csv",
        "croissant",
    }
    with pytest.raises(ExportError, match="--as applies to the chat, parlai and sharegpt formats, not jsonl"):
        export(load("casino"), "jsonl", tmp_path, as_participant="mturk_agent_2")
    result = CliRunner().invoke(
        cli, ["export", "casino", "--format", "chat", "--as", "bob", "-o", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert result.output.strip().endswith(
        "has no participant 'bob' (--as); its participants: mturk_agent_1, mturk_agent_2"
    )


def test_parlai_casino_episode(built: Bank, tmp_path: Path) -> None:
    (path,) = export(load("casino", split="valid"), "parlai", tmp_path, as_participant="mturk_agent_2")
    lines = [parlai_message(line) for line in path.read_text(encoding="utf-8").splitlines()]
    episode = [m for m in lines if m["id"] == "casino/157"]
    assert episode[0]["text"].startswith("You are at a campsite")
    assert "Hello there! Are you getting excited" in episode[0]["text"]
    assert episode[0]["labels"] == ["Hi friend! I'm very excited to go to the trip"]
    assert episode[-1]["labels"] == ["[Accept-Deal]"] and episode[-1]["episode_done"] == "True"
    assert sum("episode_done" in m for m in lines) == 30


def test_a_corpus_selecting_nothing_is_said_as_itself_not_as_a_where(built: Bank, tmp_path: Path) -> None:
    """Pass 18. Before: ``export(corpus.select([]), "chat", out)`` said ``--where selects no
    casino conversation: None``, naming an option the call never had, 2 of 2 runs."""
    with pytest.raises(ExportError) as caught:
        export(load("casino").select([]), "chat", tmp_path / "out")
    assert str(caught.value) == "the corpus is a selection of no casino conversation; nothing to export"
    assert not (tmp_path / "out").exists()
