"""How PEC is presented: seen from the responder with their persona (the default system
message), the Hugging Face loader's features and split names, Reddit authors as ConvoKit
speakers across threads, persona sizes in statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from convbank.datasets import Distribution, MetaField, Presentation, meta_distribution
from convbank.model import Conversation

if TYPE_CHECKING:
    import datasets

    from convbank.datasets import Check
    from convbank.tasks import Task


__all__ = ["PecPresentation"]


class PecPresentation(Presentation):
    """The presentation hooks of :class:`convbank.datasets.pec.Pec`."""

    def chat_side(self, conversation: Conversation) -> str:
        """The responder (the speaker of the response)."""
        return next(p.participant_id for p in conversation.participants if p.role == "responder")

    hf_split_names: ClassVar[dict[str, str]] = {"valid": "validation"}

    def hf_features(self) -> datasets.Features:
        """The Hugging Face loader's features, with ``conversation_id``."""
        from datasets import Features, Sequence, Value

        s = Value("string")
        return Features(
            {
                "personas": Sequence(s),
                "context": Sequence(s),
                "context_speakers": Sequence(s),
                "response": s,
                "response_speaker": s,
                "conversation_id": s,
            }
        )

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """The loader's example: the responder's persona (null when they have none), the
        context and its speakers, the response."""
        response = conversation.turns[-1].participant_id
        return {
            "personas": conversation.participant(response).persona or None,
            "context": [t.text for t in conversation.turns[:-1]],
            "context_speakers": [t.participant_id for t in conversation.turns[:-1]],
            "response": conversation.turns[-1].text,
            "response_speaker": response,
            "conversation_id": conversation.conversation_id,
        }

    def hf_raw(self, row: dict[str, Any]) -> Any:
        """The example again from the loader's layout: the responder's persona is the only
        one it holds (the others', and a source text, are not in it)."""
        from convbank.datasets.pec.records import Example, SpeakerPersona, Utterance

        speaker = row["response_speaker"]
        return Example(
            context=[
                Utterance(speaker=s, text=t)
                for s, t in zip(row["context_speakers"], row["context"], strict=True)
            ],
            response=Utterance(speaker=speaker, text=row["response"]),
            personas=[SpeakerPersona(speaker=speaker, persona=row["personas"])]
            if row["personas"] is not None
            else [],
        )

    global_speakers: ClassVar[bool] = True
    """Reddit authors are the same people across threads."""

    distributions: ClassVar[tuple[Distribution, ...]] = (
        meta_distribution("persona_sentences", "participants", "len(persona)", numeric=True),
        Distribution(
            "speakers",
            "SELECT config, split, count(*) AS value FROM participants WHERE dataset = ? "
            "GROUP BY config, split, conversation_id",
            numeric=True,
        ),
    )

    viewer_filters: ClassVar[dict[str, MetaField]] = {"domain": MetaField("conversations", "$.domain")}

    # ------------------------------------------------------------------ validation and tasks

    def checks(self) -> Sequence[Check]:
        """Personas, context and the responder."""
        from convbank.datasets.pec.checks import CHECKS

        return CHECKS

    def tasks(self) -> Sequence[Task]:
        """``pec-response-selection``."""
        from convbank.datasets.pec.tasks import PecResponseSelection

        return (PecResponseSelection(),)
