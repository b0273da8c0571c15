"""Validation: every check passes on the real data and the fixtures, and catches a broken
copy; the known CaSiNo warnings and the ConvAI2 findings are stable."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from convbank.build import build
from convbank.cli import cli
from convbank.fetch import Fetcher
from convbank.model import Annotation, Conversation, Participant
from convbank.query import load
from convbank.store import Bank
from convbank.validate import CHECKS, ValidationReport, checks_for, validate
from testsupport import SHARED


@pytest.fixture(scope="module")
def report(built_home: Path) -> ValidationReport:
    return validate(bank=Bank(built_home / "bank"))


def test_every_check_is_described_and_belongs_to_a_known_dataset() -> None:
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    for c in CHECKS:
        assert c.description and c.description.endswith(".")
        assert c.dataset is None or c.name.startswith(f"{c.dataset}.")
    assert {c.name for c in checks_for("casino")} >= {"casino.points", "spans", "speakers"}


def test_casino_on_the_real_data(report: ValidationReport) -> None:
    counts = {(c.name): (c.passed, c.failed) for c in report.checks if c.dataset == "casino"}
    assert counts == {
        "published_counts": (3, 0),
        "unique_ids": (1030, 0),
        "conversation_id": (1030, 0),
        "turn_indices": (1030, 0),
        "annotation_turns": (1030, 0),
        "spans": (0, 0),
        "speakers": (1030, 0),
        "silent_participants": (1030, 0),
        "casino.points": (1030, 0),
        "casino.deals": (1030, 0),
        "casino.deal_moves": (1030, 0),
        "casino.walk_away": (25, 0),
        "casino.strategy_alignment": (392, 4),
        "casino.strategy_labels": (1030, 0),
    }
    warnings = [(f.conversation_id, f.message) for f in report.findings if f.dataset == "casino"]
    assert warnings == [
        ("596", "annotation list is 1 short of the 11 messages: turn 4 ('Can you get by with one firewo')"),
        ("428", "annotation list is 1 short of the 15 messages: turn 0 ('Hello! I want to make a purcha')"),
        ("35", "annotation list is 1 short of the 12 messages: turn 5 ('I know, it makes it a little h')"),
        ("19", "turn 11: empty label in slot 2"),
    ]
    assert {f.severity for f in report.findings if f.dataset == "casino"} == {"warning"}


def test_convai2_findings_are_stable(report: ValidationReport) -> None:
    checks = {c.name: (c.passed, c.failed, c.severity) for c in report.checks if c.dataset == "convai2"}
    assert checks["silent_participants"] == (891, 511, "info")
    assert checks["convai2.rated_dialogues"] == (524, 267, "warning")
    for name in ("convai2.message_ids", "convai2.ratings", "convai2.sender_class", "unique_ids"):
        assert checks[name][1:] == (0, None), name
    findings = [f for f in report.findings if f.dataset == "convai2"]
    silent = Counter(f.message.split(" (")[0] for f in findings if f.check == "silent_participants")
    assert silent == {"participant2": 413, "participant1": 98}
    first = [f for f in findings if f.check == "convai2.rated_dialogues"][:2]
    assert [(f.conversation_id, f.message) for f in first] == [
        ("intermediate-00000", "rated 1 although the bot never spoke"),
        ("intermediate-00009", "rated 1 although the human never spoke"),
    ]


def test_fixtures_pass_every_check_but_published_counts(report: ValidationReport) -> None:
    for c in report.checks:
        if c.dataset in ("ccpe", "curiosity", "pec") and c.name != "published_counts":
            assert c.severity in (None, "warning", "info"), (c.dataset, c.name)
    assert report.result("ccpe", "published_counts").failed == 1
    assert report.result("pec", "pec.personas").failed == 1
    (missing,) = report.of("pec.personas")
    assert (missing.conversation_id, missing.message) == ("happy-train-000002", "no persona for 'erin'")
    assert report.result("ccpe", "spans").passed == 3


Mutation = Callable[[Conversation], None]


def _turn_meta(i: int, key: str, value: object) -> Mutation:
    return lambda c: c.turns[i].meta.__setitem__(key, value)


def _conv_meta(key: str, value: object) -> Mutation:
    return lambda c: c.meta.__setitem__(key, value)


def _points(agent: int, value: int) -> Mutation:
    return lambda c: c.participants[agent].meta["outcomes"].__setitem__("points_scored", value)


def _set(attr: str, value: object, turn: int) -> Mutation:
    return lambda c: setattr(c.turns[turn], attr, value)


def _annotation(i: int, **fields: object) -> Mutation:
    def apply(c: Conversation) -> None:
        for k, v in fields.items():
            setattr(c.annotations[i], k, v)

    return apply


BROKEN: list[tuple[str, str, str, Mutation, str]] = [
    # generic
    (
        "casino",
        "157",
        "conversation_id",
        lambda c: setattr(c, "conversation_id", ""),
        "the conversation id is empty",
    ),
    ("casino", "157", "turn_indices", _set("turn_index", 7, 3), "turn at position 3 has turn_index 7"),
    (
        "casino",
        "157",
        "annotation_turns",
        _annotation(0, turn_index=99),
        "strategy annotation 'small-talk' refers to turn 99, which does not exist",
    ),
    (
        "ccpe",
        "CCPE-8e113",
        "spans",
        _annotation(0, end_char=99),
        "preference 'ENTITY_NAME' on turn 1: span [14, 99) is outside the text of length 23",
    ),
    (
        "ccpe",
        "CCPE-8e113",
        "spans",
        _annotation(0, start_char=15),
        "preference 'ENTITY_NAME' on turn 1: span [15, 22) reads 'omedies', the annotation quotes 'comedies'",
    ),
    (
        "convai2",
        "volunteers-00001",
        "speakers",
        _set("participant_id", "ghost", 2),
        "turn 2: speaker 'ghost' is not a participant",
    ),
    (
        "curiosity",
        "21922",
        "silent_participants",
        lambda c: c.participants.append(Participant(participant_id="observer", role="observer")),
        "observer (observer) never speaks in 4 turns",
    ),
    # CaSiNo
    (
        "casino",
        "157",
        "casino.points",
        _points(0, 20),
        "mturk_agent_1 scored 20 points; the final deal gives 17",
    ),
    (
        "casino",
        "157",
        "casino.deals",
        lambda c: c.turns[10].meta["task_data"]["issue2youget"].__setitem__("Food", "3"),
        "Submit-Deal at turn 10 splits 5 Food, not 3",
    ),
    (
        "casino",
        "157",
        "casino.deal_moves",
        _set("participant_id", "mturk_agent_1", 11),
        "mturk_agent_1 answers their own Submit-Deal at turn 11",
    ),
    (
        "casino",
        "44",
        "casino.walk_away",
        _points(1, 12),
        "mturk_agent_2 scored 12 points after a walk-away, not 5",
    ),
    (
        "casino",
        "157",
        "casino.strategy_alignment",
        lambda c: c.turns[4].meta.pop("strategy_slots"),
        "annotation list is 1 short of the 10 messages: turn 4 ('I have checked and see that it')",
    ),
    (
        "casino",
        "157",
        "casino.strategy_labels",
        _annotation(0, label="bargaining"),
        "turn 0: unknown strategy label 'bargaining'",
    ),
    # CCPE-M
    (
        "ccpe",
        "CCPE-8e113",
        "ccpe.spans",
        _annotation(2, start_char=None, end_char=None),
        "turn 3: ENTITY_DESCRIPTION annotation has no span or no quoted text",
    ),
    (
        "ccpe",
        "CCPE-8e113",
        "ccpe.vocabulary",
        _annotation(1, label="ENTITY_FAVOURITE"),
        "turn 1: unknown annotationType 'ENTITY_FAVOURITE' in layer 'preference'",
    ),
    (
        "ccpe",
        "CCPE-8e113",
        "ccpe.vocabulary",
        lambda c: c.annotations[4].meta.__setitem__("entityType", "BOOK"),
        "turn 4: unknown entityType 'BOOK'",
    ),
    # Curiosity
    (
        "curiosity",
        "21922",
        "curiosity.likes",
        _turn_meta(0, "liked", True),
        "turn 0: a user message is liked",
    ),
    (
        "curiosity",
        "21922",
        "curiosity.facts",
        _turn_meta(2, "facts", [{"fid": 1, "used": True}]),
        "turn 2: 1 facts on a user message",
    ),
    (
        "curiosity",
        "21922",
        "curiosity.facts",
        lambda c: c.turns[1].meta["facts"].append({"fid": 77870, "used": False}),
        "turn 1: facts shown twice: [77870]",
    ),
    (
        "curiosity",
        "21922",
        "curiosity.dialog_acts",
        lambda c: c.annotations.append(Annotation(turn_index=0, layer="dialog_act", label="chit_chat")),
        "turn 0: unknown dialog_act 'chit_chat'",
    ),
    (
        "curiosity",
        "21922",
        "curiosity.alternation",
        _set("participant_id", "user", 1),
        "turns 0 and 1 are both by user",
    ),
    (
        "curiosity",
        "21922",
        "curiosity.ratings",
        _conv_meta("user_dialog_rating", 7),
        "user_dialog_rating is 7, not 1-5 or null",
    ),
    # PEC
    (
        "pec",
        "happy-train-000000",
        "pec.personas",
        lambda c: setattr(c.participants[0], "persona", []),
        "no persona for 'alice'",
    ),
    (
        "pec",
        "happy-train-000000",
        "pec.context",
        lambda c: setattr(c, "turns", c.turns[-1:]),
        "1 utterance(s): no context before the response",
    ),
    (
        "pec",
        "happy-train-000000",
        "pec.responder",
        lambda c: setattr(c.turns[-1], "participant_id", c.turns[-2].participant_id),
        "'bob' responds to their own last utterance",
    ),
    # ConvAI2
    ("convai2", "volunteers-00001", "convai2.message_ids", _turn_meta(3, "id", 9), "turn 3 has message id 9"),
    (
        "convai2",
        "volunteers-00001",
        "convai2.ratings",
        _conv_meta("eval_score", 0),
        "eval_score is 0, not 1-5 or null",
    ),
    (
        "convai2",
        "volunteers-00001",
        "convai2.ratings",
        _conv_meta("profile_match", "yes"),
        "profile_match is 'yes', not 0, 1 or \"\"",
    ),
    (
        "convai2",
        "volunteers-00001",
        "convai2.ratings",
        _turn_meta(0, "evaluation_score", 1),
        "turn 0: the human's own message has evaluation_score 1",
    ),
    (
        "convai2",
        "volunteers-00001",
        "convai2.sender_class",
        _turn_meta(1, "sender_class", "Human"),
        "turn 1: participant2 sends as 'Human', expected 'Bot'",
    ),
    (
        "convai2",
        "volunteers-00001",
        "convai2.rated_dialogues",
        lambda c: setattr(c, "turns", c.turns[:1]),
        "rated 5 although the bot never spoke",
    ),
    # the plugin dataset's own check (tests/plugins/convbank_tsvdial)
    (
        "tsvdial",
        "r001",
        "tsvdial.alternation",
        lambda c: setattr(c.turns[0], "participant_id", "agent"),
        "the first turn is by agent, not the customer",
    ),
    (
        "tsvdial",
        "r001",
        "tsvdial.alternation",
        lambda c: setattr(c.turns[2], "participant_id", "agent"),
        "turns 1 and 2 are both by agent",
    ),
]


@pytest.mark.parametrize(
    ("dataset", "conversation_id", "check_name", "mutate", "message"),
    BROKEN,
    ids=[f"{b[2]}-{i}" for i, b in enumerate(BROKEN)],
)
def test_each_check_catches_a_broken_copy(
    built: Bank, dataset: str, conversation_id: str, check_name: str, mutate: Mutation, message: str
) -> None:
    (c,) = [c for c in checks_for(dataset) if c.name == check_name]
    original = load(dataset, bank=built)[conversation_id]
    assert c.run(original) == [], "the unbroken conversation must pass"
    broken = msgspec.convert(msgspec.to_builtins(original), Conversation)
    mutate(broken)
    assert message in [m for _, m in c.run(broken) or []]


def test_every_check_has_a_broken_variant() -> None:
    assert {c.name for c in CHECKS} <= {b[2] for b in BROKEN}


def test_tampered_points_fail_in_the_bank_and_the_cli(tmp_path: Path) -> None:
    """A copy of CaSiNo with one dialogue's points changed: exactly that dialogue fails."""
    source = tmp_path / "casino"
    shutil.copytree(SHARED / "casino", source)
    valid = json.loads((source / "casino_valid.json").read_text(encoding="utf-8"))
    outcome = valid[3]["participant_info"]["mturk_agent_2"]["outcomes"]
    outcome["points_scored"] += 2
    (source / "casino_valid.json").write_text(json.dumps(valid), encoding="utf-8")
    bank = Bank(tmp_path / "home" / "bank")
    build(["casino"], fetcher=Fetcher(sources=[source], verify=False, progress=False), bank=bank)

    report = validate(["casino"], bank=bank)
    assert (
        report.result("casino", "casino.points").passed,
        report.result("casino", "casino.points").failed,
    ) == (
        1029,
        1,
    )
    (finding,) = report.of("casino.points")
    points = outcome["points_scored"]
    assert finding.to_dict() == {
        "dataset": "casino",
        "check": "casino.points",
        "severity": "error",
        "conversation_id": str(valid[3]["dialogue_id"]),
        "message": f"mturk_agent_2 scored {points} points; the final deal gives {points - 2}",
    }
    result = CliRunner().invoke(cli, ["validate", "casino", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert {"name": "casino.points", "passed": 1029, "failed": 1}.items() <= next(
        c for c in data["checks"] if c["name"] == "casino.points"
    ).items()
    assert [f["conversation_id"] for f in data["findings"] if f["severity"] == "error"] == [
        str(valid[3]["dialogue_id"])
    ]
    text = CliRunner().invoke(cli, ["validate", "casino"])
    assert text.exit_code == 1
    assert "1 error, 4 warnings, 0 infos" in text.output


def test_validate_cli_exit_zero_on_the_real_data(built: Bank) -> None:
    result = CliRunner().invoke(cli, ["validate", "casino", "convai2", "--limit", "1"])
    assert result.exit_code == 0, result.output
    assert "... 510 more convai2 silent_participants findings" in result.output
