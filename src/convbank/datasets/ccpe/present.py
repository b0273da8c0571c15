"""How CCPE-M is presented: the elicitation goal as private context, the Hugging Face
loader's features (without its placeholders), entity types in statistics and after each
highlighted span in the viewer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from convbank.datasets import (
    Context,
    Distribution,
    Presentation,
    meta_distribution,
    system_lines,
)
from convbank.model import Annotation, Conversation

if TYPE_CHECKING:
    import datasets

    from convbank.datasets import Check
    from convbank.tasks import Task


__all__ = ["CcpePresentation"]


class CcpePresentation(Presentation):
    """The presentation hooks of :class:`convbank.datasets.ccpe.Ccpe`."""

    def chat_side(self, conversation: Conversation) -> str:
        """The assistant, ``ASSISTANT``."""
        return "ASSISTANT"

    def chat_system(self, conversation: Conversation, me: str, context: Context) -> str:
        """The elicitation goal (the assistant) or the user's part."""
        if me == "ASSISTANT":
            return (
                "You are eliciting the user's movie preferences: ask which genres, movies and people "
                "they like or dislike and why, follow up on what they say, and do not recommend movies."
            )
        return "You are telling an assistant about your own movie preferences, likes and dislikes."

    def parlai_context(self, conversation: Conversation, me: str, context: Context) -> list[str]:
        """The chat system message's lines."""
        return system_lines(self.chat_system(conversation, me, context))

    def hf_features(self) -> datasets.Features:
        """The Hugging Face loader's features, without the "" class."""
        from datasets import ClassLabel, Features, Sequence, Value

        from convbank.datasets.ccpe.records import ANNOTATION_TYPES, ENTITY_TYPES, SPEAKERS

        s, i32 = Value("string"), Value("int32")
        return Features(
            {
                "conversationId": s,
                "utterances": Sequence(
                    {
                        "index": i32,
                        "speaker": ClassLabel(names=list(SPEAKERS)),
                        "text": s,
                        "segments": Sequence(
                            {
                                "startIndex": i32,
                                "endIndex": i32,
                                "text": s,
                                "annotations": Sequence(
                                    {
                                        "annotationType": ClassLabel(names=list(ANNOTATION_TYPES)),
                                        "entityType": ClassLabel(names=list(ENTITY_TYPES)),
                                    }
                                ),
                            }
                        ),
                    }
                ),
            }
        )

    def hf_record(self, conversation: Conversation) -> dict[str, Any]:
        """The raw conversation; ``segments`` and ``entityType`` null where absent (the
        loader filled them with placeholders)."""
        raw = super().hf_record(conversation)
        for utt in raw["utterances"]:
            utt.setdefault("segments", None)
            for seg in utt["segments"] or ():
                for ann in seg["annotations"]:
                    ann.setdefault("entityType", None)
        return raw

    distributions: ClassVar[tuple[Distribution, ...]] = (
        meta_distribution("entity_type", "annotations", "meta->>'entityType'"),
        Distribution(
            "annotated_speaker",
            "SELECT a.config, a.split, t.participant_id AS value FROM annotations a JOIN turns t "
            "USING (dataset, config, split, conversation_id, turn_index) WHERE a.dataset = ?",
        ),
    )

    viewer_hidden_meta: ClassVar[frozenset[str]] = frozenset({"segments", "index", "unannotated_segments"})

    def span_detail(self, annotation: Annotation) -> str | None:
        """The entity type the span is about."""
        entity = annotation.meta.get("entityType")
        return str(entity) if entity else None

    # ------------------------------------------------------------------ validation and tasks

    def checks(self) -> Sequence[Check]:
        """Preference spans and the vocabularies."""
        from convbank.datasets.ccpe.checks import CHECKS

        return CHECKS

    def tasks(self) -> Sequence[Task]:
        """``ccpe-preference-spans``."""
        from convbank.datasets.ccpe.tasks import CcpePreferenceSpans

        return (CcpePreferenceSpans(),)
