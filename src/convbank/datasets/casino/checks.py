"""CaSiNo: points, deals, deal moves, walk-aways and strategy labels."""

from __future__ import annotations

from collections.abc import Iterator

from convbank.datasets import CheckList, Problem
from convbank.datasets.casino.records import AGENTS, ITEMS, STRATEGIES, count, points
from convbank.model import Conversation, Turn

__all__ = ["CHECKS", "WALK_AWAY_POINTS", "expected_points"]

CHECKS = CheckList("casino")

WALK_AWAY_POINTS = 5


def _actions(conv: Conversation, text: str | None = None) -> list[Turn]:
    return [t for t in conv.turns if t.kind == "action" and (text is None or t.text == text)]


def _other(agent: str) -> str:
    return AGENTS[1 - AGENTS.index(agent)]


def expected_points(conv: Conversation) -> dict[str, int] | str:
    """Each negotiator's points recomputed from the final deal and their priorities, or
    why they cannot be (no accepted deal and no walk-away)."""
    if _actions(conv, "Walk-Away"):
        return dict.fromkeys(AGENTS, WALK_AWAY_POINTS)
    accepts = _actions(conv, "Accept-Deal")
    if not accepts:
        return "no accepted deal and no walk-away"
    submits = [t for t in _actions(conv, "Submit-Deal") if t.turn_index < accepts[-1].turn_index]
    if not submits:
        return f"Accept-Deal at turn {accepts[-1].turn_index} follows no Submit-Deal"
    deal, submitter = submits[-1].meta["task_data"], submits[-1].participant_id
    priorities = {p.participant_id: p.meta["value2issue"] for p in conv.participants}
    scores = {
        submitter: points(priorities[submitter], deal.get("issue2youget", {})),
        _other(submitter): points(priorities[_other(submitter)], deal.get("issue2theyget", {})),
    }
    counted = {agent: n for agent, n in scores.items() if n is not None}
    if len(counted) < len(scores):
        return (
            f"the final deal (Submit-Deal at turn {submits[-1].turn_index}) has a count that is not a number"
        )
    return counted


def _scored(conv: Conversation) -> dict[str, int]:
    return {p.participant_id: p.meta["outcomes"]["points_scored"] for p in conv.participants}


@CHECKS.check("casino.points")
def points_scored(conv: Conversation) -> Iterator[Problem]:
    """Points recomputed from the final deal and the priorities equal points_scored."""
    expected = expected_points(conv)
    if isinstance(expected, str):
        yield "error", expected
        return
    for agent, score in _scored(conv).items():
        if expected.get(agent) != score:
            yield "error", f"{agent} scored {score} points; the final deal gives {expected.get(agent)}"


@CHECKS.check("casino.deals")
def deals(conv: Conversation) -> Iterator[Problem]:
    """Every submitted deal splits exactly 3 of each item."""
    for t in _actions(conv, "Submit-Deal"):
        deal = t.meta.get("task_data", {})
        you, they = deal.get("issue2youget"), deal.get("issue2theyget")
        if you is None or they is None:
            yield "error", f"Submit-Deal at turn {t.turn_index} carries no deal"
            continue
        for item in ITEMS:
            mine, theirs = count(you.get(item)), count(they.get(item))
            if mine is None or theirs is None:
                bad = you.get(item) if mine is None else they.get(item)
                yield "error", f"Submit-Deal at turn {t.turn_index} gives {bad!r} {item}, not a count"
            elif mine + theirs != 3:
                yield "error", f"Submit-Deal at turn {t.turn_index} splits {mine + theirs} {item}, not 3"


@CHECKS.check("casino.deal_moves")
def deal_moves(conv: Conversation) -> Iterator[Problem]:
    """Accept-Deal and Reject-Deal answer a Submit-Deal made by the other side."""
    previous: Turn | None = None
    for t in _actions(conv):
        if t.text in ("Accept-Deal", "Reject-Deal"):
            if previous is None or previous.text != "Submit-Deal":
                what = previous.text if previous else "nothing"
                yield "error", f"{t.text} at turn {t.turn_index} follows {what}, not a Submit-Deal"
            elif previous.participant_id == t.participant_id:
                yield "error", f"{t.participant_id} answers their own Submit-Deal at turn {t.turn_index}"
        previous = t


@CHECKS.check("casino.walk_away")
def walk_away(conv: Conversation) -> Iterator[Problem] | None:
    """A walk-away gives both negotiators 5 points."""
    if not _actions(conv, "Walk-Away"):
        return None
    return (
        ("error", f"{agent} scored {score} points after a walk-away, not {WALK_AWAY_POINTS}")
        for agent, score in _scored(conv).items()
        if score != WALK_AWAY_POINTS
    )


@CHECKS.check("casino.strategy_alignment")
def strategy_alignment(conv: Conversation) -> Iterator[Problem] | None:
    """In annotated dialogues every message has its labels; empty labels are reported."""
    messages = [t for t in conv.turns if t.kind == "message"]
    annotated = [t for t in messages if "strategy_slots" in t.meta]
    if not annotated:
        return None
    found: list[Problem] = []
    missing = [t for t in messages if "strategy_slots" not in t.meta]
    if missing:
        listed = ", ".join(f"{t.turn_index} ({t.text[:30]!r})" for t in missing)
        found.append(
            (
                "warning",
                f"annotation list is {len(missing)} short of the {len(messages)} messages: turn {listed}",
            )
        )
    for t in annotated:
        labelled = {a.meta.get("slot") for a in conv.annotations_of(t.turn_index, "strategy")}
        for slot in range(t.meta["strategy_slots"]):
            if slot not in labelled:
                found.append(("warning", f"turn {t.turn_index}: empty label in slot {slot}"))
    return iter(found)


@CHECKS.check("casino.strategy_labels")
def strategy_labels(conv: Conversation) -> Iterator[Problem]:
    """Strategy labels come from the ten of the annotation scheme."""
    for a in conv.annotations:
        if a.layer != "strategy" or a.label not in STRATEGIES:
            yield "error", f"turn {a.turn_index}: unknown {a.layer} label {a.label!r}"
