"""How Curiosity is presented: the facts shown to the assistant, with their text from the fact
database, as private context, in the viewer and in the terminal; the Hugging Face loader's
features (booleans kept as booleans); ratings and likes in statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from convbank.datasets import (
    Badge,
    Context,
    Distribution,
    MetaField,
    Note,
    Presentation,
    SideLookup,
    TerminalTurn,
    ViewerTurn,
    meta_distribution,
    system_lines,
)
from convbank.datasets.curiosity.records import RATINGS, fact_texts
from convbank.model import Annotation, Conversation, Turn

if TYPE_CHECKING:
    import datasets

    from convbank.datasets import Check
    from convbank.tasks import Task


__all__ = ["CuriosityPresentation"]

_LIKERT = ("1", "2", "3", "4", "5")


class CuriosityPresentation(Presentation):
    """The presentation hooks of :class:`convbank.datasets.curiosity.Curiosity`."""

    def conversation_context(self, conversation: Conversation, side: SideLookup) -> dict[str, Any]:
        """``{"facts": {fid: text}}`` for the facts shown (the fact database's text)."""
        return {"facts": fact_texts(conversation, side)}

    # ------------------------------------------------------------------ chat and ParlAI
    def chat_side(self, conversation: Conversation) -> str:
        """The assistant."""
        return "assistant"

    def chat_system(self, conversation: Conversation, me: str, context: Context) -> str:
        """The user's focus and known places, or the assistant's topic and the facts it was
        shown (with their text when the fact database is built)."""
        meta = conversation.meta
        if me == "user":
            known = ", ".join(meta.get("known_entities", [])) or "none"
            return (
                f"You are a curious user learning about {meta.get('focus_entity')}. "
                f"Places you already know: {known}."
            )
        facts: dict[int, str] = context.get("facts", {})
        shown: dict[int, None] = {}
        for t in conversation.turns:
            for f in t.meta.get("facts", ()):
                shown.setdefault(f["fid"])
        lines = [
            f"You teach a curious user about {meta.get('focus_entity')}, covering "
            f"{meta.get('first_aspect')} and {meta.get('second_aspect')}. Facts you can use:"
        ]
        lines += [f"- [{fid}] {facts[fid]}" if fid in facts else f"- [{fid}]" for fid in shown]
        return "\n".join(lines)

    def chat_outcome(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """Both sides' ratings."""
        return {k: v for k, v in conversation.meta.items() if k.endswith("_rating")}

    target_names: ClassVar[tuple[str, ...]] = tuple(RATINGS)

    def targets(self, conversation: Conversation, me: str) -> dict[str, Any]:
        """Both sides' ratings of the dialogue and of each other (1-5), for either side."""
        return {k: conversation.meta.get(k) for k in self.target_names}

    def parlai_context(self, conversation: Conversation, me: str, context: Context) -> list[str]:
        """The chat system message's lines."""
        return system_lines(self.chat_system(conversation, me, context))

    # ------------------------------------------------------------------ Hugging Face
    def hf_features(self) -> datasets.Features:
        """The Hugging Face loader's features, with booleans as booleans."""
        from datasets import ClassLabel, Features, Sequence, Value

        from convbank.datasets.curiosity.records import FACT_SOURCES

        s, i32, b = Value("string"), Value("int32"), Value("bool")
        return Features(
            {
                "messages": Sequence(
                    {
                        "message": s,
                        "liked": b,
                        "sender": ClassLabel(names=["user", "assistant"]),
                        "facts": Sequence(
                            {"fid": i32, "used": b, "source": ClassLabel(names=list(FACT_SOURCES))}
                        ),
                        "message_id": s,
                        "dialog_acts": Sequence(s),
                    }
                ),
                "known_entities": Sequence(s),
                "focus_entity": s,
                "dialog_id": i32,
                "inferred_steps": b,
                "created_time": Value("int64"),
                "aspects": Sequence(s),
                "first_aspect": s,
                "second_aspect": s,
                "shuffle_facts": b,
                "related_entities": Sequence(s),
                "tag": s,
                "user_id": i32,
                "assistant_id": i32,
                "is_annotated": b,
                "user_dialog_rating": i32,
                "user_other_agent_rating": i32,
                "assistant_dialog_rating": i32,
                "assistant_other_agent_rating": i32,
                "reported": b,
                "annotated": b,
            }
        )

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """The raw dialogue; a fact without ``source`` has a null one."""
        raw = super().hf_record(conversation)
        for m in raw["messages"]:
            for f in m["facts"]:
                f.setdefault("source", None)
        return raw

    # ------------------------------------------------------------------ statistics
    distributions: ClassVar[tuple[Distribution, ...]] = (
        *(meta_distribution(n, "conversations", f"meta->>'{n}'", order=_LIKERT) for n in RATINGS),
        meta_distribution(
            "liked", "turns", "meta->>'liked'", "participant_id = 'assistant'", order=("false", "true")
        ),
        meta_distribution(
            "facts_shown",
            "turns",
            "json_array_length(meta->'facts')",
            "participant_id = 'assistant'",
            numeric=True,
        ),
    )

    # ------------------------------------------------------------------ viewer and terminal
    viewer_filters: ClassVar[dict[str, MetaField]] = {
        "focus_entity": MetaField("conversations", "$.focus_entity"),
        "user_dialog_rating": MetaField("conversations", "$.user_dialog_rating"),
        "assistant_dialog_rating": MetaField("conversations", "$.assistant_dialog_rating"),
    }
    viewer_hidden_meta: ClassVar[frozenset[str]] = frozenset({"facts", "liked", "message_id", "dialog_acts"})
    terminal_hidden_meta: ClassVar[frozenset[str]] = frozenset({"facts"})

    def viewer_turn(self, turn: Turn, context: Context) -> ViewerTurn:
        """A like as a badge; every fact shown as a note, used ones strong, with its text."""
        facts: dict[int, str] = context.get("facts", {})
        notes = []
        for f in turn.meta.get("facts", ()):
            where = f"{f['fid']}, {f['source']}" if f.get("source") else str(f["fid"])
            text = facts.get(f["fid"]) or ""
            notes.append(
                Note(f"{'used' if f.get('used') else 'shown'} [{where}] {text}", bool(f.get("used")))
            )
        badges = (Badge("♥ liked", "liked"),) if turn.meta.get("liked") else ()
        return ViewerTurn(badges=badges, notes=tuple(notes))

    def label_class(self, annotation: Annotation) -> str:
        """Dialog acts are styled as acts."""
        return "act" if annotation.layer == "dialog_act" else ""

    def terminal_turn(self, turn: Turn, context: Context) -> TerminalTurn:
        """How many facts were shown and used, and the text of the used ones."""
        shown = turn.meta.get("facts")
        if not shown:
            return super().terminal_turn(turn, context)
        facts: dict[int, str] = context.get("facts", {})
        used = [f["fid"] for f in shown if f.get("used")]
        return TerminalTurn(
            note=f"facts shown {len(shown)}, used {len(used)}",
            lines=tuple(f"fact {fid}: {facts[fid]}" for fid in used if fid in facts),
        )

    # ------------------------------------------------------------------ checks and tasks

    # ------------------------------------------------------------------ validation and tasks

    def checks(self) -> Sequence[Check]:
        """Likes, facts, dialog acts, turn taking and ratings."""
        from convbank.datasets.curiosity.checks import CHECKS

        return CHECKS

    def tasks(self) -> Sequence[Task]:
        """The four tasks of the paper's Table 4."""
        from convbank.datasets.curiosity.tasks import (
            CuriosityFactRanking,
            CuriosityLike,
            CuriosityPolicyActs,
            CuriosityUtteranceActs,
        )

        return (CuriosityUtteranceActs(), CuriosityPolicyActs(), CuriosityLike(), CuriosityFactRanking())
