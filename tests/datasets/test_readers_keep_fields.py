"""Readers: every field kept exactly as published, on the real files and the fixtures."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise
from pathlib import Path

import msgspec
import pytest

from convbank import catalog
from convbank.build import read_raw
from convbank.datasets.casino import STRATEGIES
from convbank.fetch import Fetcher
from convbank.model import Part
from testsupport import SHARED


def _records(name: str, sources: list[Path], config: str | None = None, split: str | None = None) -> list:
    fetcher = Fetcher(sources=sources, verify=False, progress=False)
    return [r for _, _, r in read_raw(name, config, split, fetcher=fetcher)]


@pytest.fixture(scope="module")
def casino() -> dict[str, list]:
    fetcher = Fetcher(sources=[SHARED], progress=False)  # verified against the published sha256
    out: dict[str, list] = {}
    for _, split, r in read_raw("casino", fetcher=fetcher):
        out.setdefault(split, []).append(r)
    return out


def test_casino_split_counts_and_types(casino: dict[str, list]) -> None:
    assert {s: len(v) for s, v in casino.items()} == {"train": 900, "valid": 30, "test": 100}
    d = casino["train"][0]
    assert d.dialogue_id == 938 and isinstance(d.dialogue_id, int)
    info = d.participant_info["mturk_agent_1"]
    assert info.outcomes.points_scored == 22 and isinstance(info.demographics.age, int)
    assert info.personality.big_five.openness_to_experiences == 6.5
    assert info.value2issue["High"] == "Firewood"
    deal = d.chat_logs[-2].task_data
    assert msgspec.to_builtins(deal) == {
        "issue2youget": {"Water": "3", "Firewood": "1", "Food": "0"},
        "issue2theyget": {"Water": "0", "Firewood": "2", "Food": "3"},
    }
    assert msgspec.to_builtins(d.chat_logs[-1].task_data) == {"data": "accept_deal"}
    assert msgspec.to_builtins(d.chat_logs[0].task_data) == {}


def test_casino_key_orders_are_kept(casino: dict[str, list]) -> None:
    """The publisher's key order varies in three places; the typed records keep it (maps)."""
    dialogues = [d for split in casino.values() for d in split]
    agents = Counter(tuple(d.participant_info) for d in dialogues)
    assert agents == {("mturk_agent_1", "mturk_agent_2"): 504, ("mturk_agent_2", "mturk_agent_1"): 526}
    levels = Counter(tuple(i.value2issue) for d in dialogues for i in d.participant_info.values())
    assert len(levels) == 6 and sum(levels.values()) == 2060
    deals = Counter(
        tuple(log.task_data.issue2youget)
        for d in dialogues
        for log in d.chat_logs
        if log.task_data.issue2youget
    )
    assert len(deals) == 6 and sum(deals.values()) == 1181


def test_casino_strategy_labels(casino: dict[str, list]) -> None:
    dialogues = [d for split in casino.values() for d in split]
    annotated = [d for d in dialogues if d.annotations]
    assert len(annotated) == 396 and len(dialogues) - len(annotated) == 634
    labels = Counter(label for d in annotated for _, ls in d.annotations for label in ls.split(","))
    assert labels == {
        "non-strategic": 1455,
        "small-talk": 1054,
        "self-need": 964,
        "promote-coordination": 579,
        "vouch-fair": 439,
        "other-need": 409,
        "elicit-pref": 377,
        "showing-empathy": 254,
        "no-need": 196,
        "uv-part": 131,
        "": 1,
    }
    assert set(labels) - {""} == set(STRATEGIES)
    moves = Counter(c.text for d in dialogues for c in d.chat_logs if msgspec.to_builtins(c.task_data))
    assert moves == {"Submit-Deal": 1181, "Accept-Deal": 1005, "Reject-Deal": 167, "Walk-Away": 25}


@pytest.mark.parametrize(
    ("config", "eval_scores", "profile_match", "turns"),
    [
        ("volunteers", {None: 518, 1: 208, 2: 116, 3: 120, 4: 70, 5: 79}, {"": 628, 1: 300, 0: 183}, 14623),
        ("intermediate", {None: 93, 1: 110, 2: 29, 3: 39, 4: 13, 5: 7}, {"": 126, 1: 105, 0: 60}, 4316),
    ],
)
def test_convai2_distributions(config: str, eval_scores: dict, profile_match: dict, turns: int) -> None:
    records = _records("convai2", [SHARED], config)
    assert Counter(r.eval_score for r in records) == eval_scores
    assert Counter(r.profile_match for r in records) == profile_match
    assert all(type(r.profile_match) in (int, str) for r in records)
    assert sum(len(r.dialog) for r in records) == turns
    assert {(m.sender, m.sender_class) for r in records for m in r.dialog} == {
        ("participant1", "Human"),
        ("participant2", "Bot"),
    }
    assert sum("\n" in m.text for r in records for m in r.dialog) > 0  # newlines kept
    first = records[0]
    assert first.participant1_id.class_ == "User" and first.participant2_id.class_ == "Bot"
    assert msgspec.inspect.type_info(type(first)).fields  # typed struct, not a dict


def test_ccpe_fixture_quirks(fixture_sources: Path) -> None:
    (c1, c2, c3) = _records("ccpe", [fixture_sources])
    assert c1.conversationId == "CCPE-8e113"
    starts = [seg.startIndex for seg in c1.utterances[3].segments]
    assert starts == [17, 0]  # segments are not sorted by position
    raw = (fixture_sources / "ccpe" / "data.json").read_bytes()
    assert raw.isascii() and b'"Am\\u00e9lie"' in raw and b'"segments": [ {' in raw  # the publisher's style
    plain = msgspec.to_builtins(c1.utterances[0])
    assert "segments" not in plain  # absent stays absent
    assert msgspec.to_builtins(c2.utterances[1])["segments"] == []  # empty stays empty
    speakers = [u.speaker for u in c1.utterances]
    assert ("USER", "USER") in pairwise(speakers)
    seg = c1.utterances[4].segments[0]
    assert c1.utterances[4].text[seg.startIndex : seg.endIndex] == seg.text == "Amélie"
    assert [a.annotationType for a in c1.utterances[1].segments[0].annotations] == [
        "ENTITY_NAME",
        "ENTITY_PREFERENCE",
    ]
    assert c2.utterances[2].segments[1].annotations == []
    assert "\n" in c3.utterances[1].text


def test_curiosity_fixture_quirks(fixture_sources: Path) -> None:
    train = _records("curiosity", [fixture_sources], split="train")
    assert [d.dialog_id for d in train] == [21922, 100, 101]
    acts = [m.dialog_acts for d in train for m in d.messages]
    assert None in acts and [] in acts and ["request_topic", "request_aspect"] in acts
    assert ["social_thanking", "social_goodbye"] in acts
    pilot = train[1]
    assert (pilot.tag, pilot.first_aspect, pilot.second_aspect) == ("pilot", None, None)
    assert (pilot.user_id, pilot.assistant_id) == ("314", "262")  # numeric strings, as published
    assert all(m.message_id.isdigit() for d in train for m in d.messages)
    val = _records("curiosity", [fixture_sources], split="val")
    assert [(m.message, m.dialog_acts) for m in val[0].messages][2] == ("", [])
    test = _records("curiosity", [fixture_sources], split="test")
    assert ["request_followup", "shift_aspect"] in [m.dialog_acts for m in test[0].messages]
    folds = {
        s: json.loads((fixture_sources / "curiosity" / f"curiosity_dialogs.{s}.json").read_text())["fold"]
        for s in ("train", "val", "test", "test_zero")
    }
    assert all(fold != split for split, fold in folds.items())  # the fold key is not the file's split
    facts = [msgspec.to_builtins(f) for d in train for m in d.messages for f in m.facts]
    assert {"fid": 5001, "used": True} in facts  # source missing stays missing
    assert all(isinstance(f["used"], bool) for f in facts)
    assert train[0].messages[1].liked is True and train[0].inferred_steps is False
    assert train[1].user_dialog_rating is None


def test_pec_fixture_quirks(fixture_sources: Path) -> None:
    happy = _records("pec", [fixture_sources], "happy", "train")
    assert len(happy) == 3
    first = happy[0]
    assert [u.speaker for u in first.context] == ["alice", "bob"]
    assert first.response.speaker == "alice"
    assert first.response.text == "Thank you so much, I worked\nreally hard for it\nand it paid off."
    # personas of every speaker, not only the responder's
    assert {p.speaker: p.persona for p in first.personas} == {
        "alice": ["i love my job.", "i have two dogs."],
        "bob": ["i am an uncle.", "i like running.", "i live in ohio."],
    }
    third = happy[2]
    assert [p.speaker for p in third.personas] == ["frank"]  # erin has no persona
    assert third.context[0].text.endswith('<script>alert("x")</script>')
    both = _records("pec", [fixture_sources], "all", "train")
    assert len(both) == 5
    # the odd separator spacing and the blank line before the second example are kept exactly
    assert first.source.endswith(
        "alice---+---Thank you so much, I worked\nreally hard for it\nand it paid off.\n" + "*" * 20 + "\n"
    )
    assert happy[1].source.startswith("\ncarol ---+--- My cat came back")
    assert happy[2].source is msgspec.UNSET  # written the publisher's way: nothing to keep
    offmychest = _records("pec", [fixture_sources], "offmychest", "train")
    assert offmychest[1].response.text == "i ’m so sorry for your loss ."  # UTF-8, lowercased, tokenised


def test_pec_reads_the_zip_too(fixture_sources: Path, tmp_path: Path) -> None:
    import shutil

    archive = shutil.make_archive(str(tmp_path / "src" / "hf_pec"), "zip", fixture_sources / "pec", "hf_pec")
    assert Path(archive).name == "hf_pec.zip"
    from_zip = _records("pec", [tmp_path / "src"], "offmychest")
    from_folder = _records("pec", [fixture_sources], "offmychest")
    assert from_zip == from_folder and len(from_zip) == 4


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["dialogs"][0]["messages"][1].__setitem__("liked", "yes"),
            "at $.dialogs[0].messages[1].liked: expected `bool`, got `str`; not the Curiosity format as "
            "published — re-fetch the file or check that it is the right one",
        ),
        (
            lambda d: d.pop("dialogs"),
            "at $: no 'dialogs' key; expected the Curiosity format {\"dialogs\": [...]} — re-fetch the file",
        ),
    ],
)
def test_curiosity_errors_name_the_json_path(
    fixture_sources: Path, tmp_path: Path, mutate, message: str
) -> None:  # type: ignore[no-untyped-def]
    import json

    from convbank.errors import FormatError

    folder = tmp_path / "curiosity"
    folder.mkdir()
    data = json.loads((fixture_sources / "curiosity" / "curiosity_dialogs.val.json").read_text())
    mutate(data)
    path = folder / "curiosity_dialogs.val.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError) as info:
        _records("curiosity", [tmp_path], split="val")
    assert str(info.value) == f"{path}: {message}"


SAMPLES = SHARED.parent / "samples"


def test_tolokers_reader_takes_the_published_head(tmp_path: Path) -> None:
    """data_tolokers.json is not here, but its first 1,594 bytes are: the first dialog's
    messages in the volunteers layout (evaluation_score null, sender_class). Completed with
    the rest of a record in that layout, it reads, maps and comes back byte for byte."""
    head = (SAMPLES / "convai2" / "extra" / "data_tolokers.head_excerpt.txt").read_bytes()
    assert head.startswith(b'[{"dialog": [{"id": 0, ') and head.endswith(b'"sender_class": "Bot"}]')
    rest = (
        b', "start_time": "2018-07-02 10:00:00.000000", "end_time": "2018-07-02 10:10:00.000000", '
        b'"bot_profile": ["i love iphone."], "user_profile": ["i go to the gym."], "eval_score": null, '
        b'"profile_match": "", "participant1_id": {"class": "User", "user_id": "u1"}, '
        b'"participant2_id": {"class": "Bot", "user_id": "b1"}}]'
    )
    (tmp_path / "src" / "convai2").mkdir(parents=True)
    (tmp_path / "src" / "convai2" / "data_tolokers.json").write_bytes(head + rest)
    (record,) = _records("convai2", [tmp_path / "src"], "tolokers")
    assert len(record.dialog) == 11
    assert {m.evaluation_score for m in record.dialog} == {None}
    assert [m.sender_class for m in record.dialog[:2]] == ["Bot", "Human"]
    export = json.loads((SAMPLES / "convai2" / "extra" / "export_2018-07-04_train.json").read_text())
    same = next(d for d in export if d["dialog_id"] == "0xab38710")  # the same dialog, exported by day
    assert [(m.id, m.sender, m.text) for m in record.dialog] == [
        (m["id"], m["sender"], m["text"]) for m in same["dialog"]
    ]
    ds = catalog.get("convai2")
    conv = ds.to_conversation(record, Part("tolokers", "train"), 0)
    assert conv.conversation_id == "tolokers-00000"
    paths = {"data_tolokers.json": tmp_path / "src" / "convai2" / "data_tolokers.json"}
    ds.write_source(
        [ds.from_conversation(conv)],
        Part("tolokers", "train"),
        ds.file_meta(paths, Part("tolokers", "train")),
        tmp_path,
    )
    assert (tmp_path / "data_tolokers.json").read_bytes() == head + rest


def test_summer_wild_records_are_the_daily_exports_with_sender_class() -> None:
    """The organisers' daily exports hold the summer_wild dialogs without sender_class (not a
    published config); the real summer_wild records read as those plus sender_class."""
    records = _records("convai2", [SAMPLES], "summer_wild")
    daily = {
        d["dialog_id"]: d
        for day in ("04", "05", "06", "07")
        for d in json.loads((SAMPLES / "convai2" / "extra" / f"export_2018-07-{day}_train.json").read_text())
    }
    assert len(daily) == 3005
    for r in records:
        published = msgspec.to_builtins(r)
        assert {m["sender_class"] for m in published["dialog"]} == {"Bot", "Human"}
        for m in published["dialog"]:
            del m["sender_class"]
        assert published == daily[r.dialog_id]
    assert [r.dialog_id for r in records] == ["0xa28c932", "0x648cc5b7", "0x420e9187"]
    assert all(m.evaluation_score is msgspec.UNSET for r in records for m in r.dialog)


END_LINE = "*" * 20 + "\n"


@pytest.mark.parametrize(
    "text",
    [
        "a ---+--- hi\n" + END_LINE,
        "a ---+--- hi\nmore\n" + END_LINE,
        "a ---+--- x ---+--- y\n" + END_LINE,
        "a ---+---  hi\n" + END_LINE,
        "a  ---+--- hi\n" + END_LINE,
        " a ---+--- hi\n" + END_LINE,
        "a---+---hi\n" + END_LINE,
        "a ---+--- hi \n" + END_LINE,
        "a ---+--- hi\r\n" + END_LINE,
        "a ---+--- hi\n\n" + END_LINE,
        "\na ---+--- hi\n" + END_LINE,
        "a ---+--- hi\n  more\n" + END_LINE,
        "a ---+--- \nmore\n" + END_LINE,
        "a ---+--- hi\n" + "*" * 20 + " \n",
        "a ---+--- hi\n" + "*" * 20,
    ],
)
def test_pec_examples_come_back_exactly(text: str, tmp_path: Path) -> None:
    """Whatever the spacing, blank lines or line ends, an example is its usual rendering or
    keeps its exact text; the loader's view (stripped, blank lines skipped) is the same."""
    from convbank.datasets.pec import conversation_block, parse_lines

    path = tmp_path / "train.txt"
    path.write_text(text, encoding="utf-8", newline="")
    ((utterances, source, _),) = parse_lines(path)
    assert (source or conversation_block(utterances)) == text
    if source is None:
        assert conversation_block(utterances) == text
    assert [u.speaker for u in utterances] == ["a"]
    assert utterances[0].text in ("hi", "hi\nmore", "x ---+--- y", "\nmore")
