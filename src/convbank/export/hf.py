"""``hf``: Hugging Face ``datasets``, with the features of the Hugging Face loader of each
dataset (same column names and nesting), so code written for those loaders keeps working.

Where the loaders used sentinels, the export keeps what the publisher wrote:

- Curiosity: ``liked``, ``used`` and the dialogue flags are booleans, not the strings
  "False"/"True" behind a ClassLabel; a fact without ``source`` has a null source; null
  ``dialog_acts`` stay null (the loader could not tell them from ``[]``).
- CCPE-M: an utterance without segments has ``segments`` null, not a placeholder segment
  of empty strings; the "" class is gone from the ClassLabels; a missing ``entityType`` is
  null.
- ConvAI2: missing ``eval_score`` and an empty ``profile_match`` are null, not -1; the
  profiles are lists of sentences (as published) and the per-message ``evaluation_score``,
  the times and the participant ids are kept as extra columns.
- CaSiNo gains ``dialogue_id``, PEC ``conversation_id``; a PEC response whose speaker has
  no persona has ``personas`` null. PEC's ``valid`` split is named ``validation`` as in the
  loader.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convbank.errors import ExportError, require
from convbank.export._core import Selection
from convbank.model import Conversation
from convbank.store import Bank

if TYPE_CHECKING:
    import datasets

__all__ = ["HF_SPLIT_NAMES", "features", "hf_record", "to_hf", "write_hf"]

HF_SPLIT_NAMES = {("pec", "valid"): "validation"}


@cache
def features(name: str) -> datasets.Features:
    """The Hugging Face features of a dataset's export."""
    from datasets import ClassLabel, Features, List, Sequence, Value

    s, i32 = Value("string"), Value("int32")
    if name == "casino":
        items = {"Firewood": s, "Water": s, "Food": s}
        levels = {"Low": s, "Medium": s, "High": s}
        agent = {
            "value2issue": levels,
            "value2reason": levels,
            "outcomes": {"points_scored": i32, "satisfaction": s, "opponent_likeness": s},
            "demographics": {"age": i32, "gender": s, "ethnicity": s, "education": s},
            "personality": {
                "svo": s,
                "big-five": {
                    k: Value("float32")
                    for k in (
                        "extraversion",
                        "agreeableness",
                        "conscientiousness",
                        "emotional-stability",
                        "openness-to-experiences",
                    )
                },
            },
        }
        return Features(
            {
                "chat_logs": List(
                    {
                        "text": s,
                        "task_data": {"data": s, "issue2youget": items, "issue2theyget": items},
                        "id": s,
                    }
                ),
                "participant_info": {"mturk_agent_1": agent, "mturk_agent_2": agent},
                "annotations": List(List(s)),
                "dialogue_id": i32,
            }
        )
    if name == "ccpe":
        from convbank.datasets.ccpe import ANNOTATION_TYPES, ENTITY_TYPES, SPEAKERS

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
    if name == "curiosity":
        from convbank.datasets.curiosity import FACT_SOURCES

        b = Value("bool")
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
    if name == "pec":
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
    if name == "convai2":
        ident = {"class": s, "user_id": s}
        return Features(
            {
                "id": s,
                "dialog_id": s,
                "dialog": List(
                    {"id": i32, "sender": s, "text": s, "sender_class": s, "evaluation_score": i32}
                ),
                "bot_profile": Sequence(s),
                "user_profile": Sequence(s),
                "eval_score": i32,
                "profile_match": i32,
                "start_time": s,
                "end_time": s,
                "participant1_id": ident,
                "participant2_id": ident,
            }
        )
    raise ExportError(f"no Hugging Face features are defined for {name!r}")


def _fit(feature: Any, value: Any) -> Any:
    """Shape ``value`` for ``feature``: a list of dicts under a ``Sequence(dict)`` (a dict of
    lists in ``datasets``) becomes the dict of lists the loaders produced; class names
    become class ids."""
    from datasets import ClassLabel, List

    if value is None:
        return None
    if isinstance(feature, ClassLabel):
        return feature.str2int(value)
    if isinstance(feature, dict):
        if isinstance(value, list):
            return {k: [_fit(f.feature, v.get(k)) for v in value] for k, f in feature.items()}
        return {k: _fit(f, value.get(k)) for k, f in feature.items()}
    if isinstance(feature, List):
        return [_fit(feature.feature, v) for v in value]
    return value


def hf_record(conv: Conversation, dataset: Any) -> dict[str, Any]:
    """One conversation as a row of the Hugging Face loader's schema."""
    return dict(_fit(features(conv.dataset), _loader_shape(conv, dataset)))


def _loader_shape(conv: Conversation, dataset: Any) -> dict[str, Any]:
    raw: dict[str, Any] = msgspec.to_builtins(dataset.from_conversation(conv))
    name = conv.dataset
    if name == "casino":
        for log in raw["chat_logs"]:
            log["task_data"] = {k: log["task_data"].get(k) for k in ("data", "issue2youget", "issue2theyget")}
        raw["annotations"] = [list(pair) for pair in raw["annotations"]]
    elif name == "ccpe":
        for utt in raw["utterances"]:
            utt.setdefault("segments", None)
            for seg in utt["segments"] or ():
                for ann in seg["annotations"]:
                    ann.setdefault("entityType", None)
    elif name == "curiosity":
        for m in raw["messages"]:
            for f in m["facts"]:
                f.setdefault("source", None)
    elif name == "pec":
        response = conv.turns[-1].participant_id
        return {
            "personas": conv.participant(response).persona or None,
            "context": [t.text for t in conv.turns[:-1]],
            "context_speakers": [t.participant_id for t in conv.turns[:-1]],
            "response": conv.turns[-1].text,
            "response_speaker": response,
            "conversation_id": conv.conversation_id,
        }
    elif name == "convai2":
        raw["id"] = conv.conversation_id
        raw.setdefault("dialog_id", None)
        if raw["profile_match"] == "":
            raw["profile_match"] = None
        for m in raw["dialog"]:
            m.setdefault("sender_class", None)
            m.setdefault("evaluation_score", None)
        for key in ("start_time", "end_time", "participant1_id", "participant2_id"):
            raw.setdefault(key, None)
    return raw


def _rows(
    dataset: str, config: str, split: str, bank_root: str, where: str | None
) -> Iterator[dict[str, Any]]:
    from convbank.query import Corpus

    selection = Selection(Corpus(dataset, config, split, bank=Bank(Path(bank_root))), where)
    for conv in selection.conversations(config, split):
        yield hf_record(conv, selection.corpus.dataset)


@contextmanager
def _quiet() -> Iterator[None]:
    """No ``datasets`` progress bars while convbank writes (its own output stays clean)."""
    import datasets

    was = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was:
            datasets.enable_progress_bars()


def to_hf(selection: Selection, config: str, cache_dir: Path | None = None) -> datasets.DatasetDict:
    """The selected conversations of one config as a ``DatasetDict``, one entry per split."""
    require("datasets", "hf", "The Hugging Face export")
    import datasets

    feats = features(selection.dataset)
    splits = {}
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        for cfg, split in selection.parts():
            if cfg != config:
                continue
            splits[HF_SPLIT_NAMES.get((selection.dataset, split), split)] = datasets.Dataset.from_generator(
                _rows,
                features=feats,
                gen_kwargs={
                    "dataset": selection.dataset,
                    "config": config,
                    "split": split,
                    "bank_root": str(selection.corpus.bank.root),
                    "where": selection.where,
                },
                cache_dir=str(cache_dir or tmp),
                keep_in_memory=cache_dir is None,
            )
    return datasets.DatasetDict(splits)


def write_hf(selection: Selection, directory: Path) -> list[Path]:
    """``{config}/``: one ``DatasetDict.save_to_disk`` folder per config."""
    written = []
    configs = dict.fromkeys(c for c, _ in selection.parts())
    for config in configs:
        with tempfile.TemporaryDirectory(dir=directory) as cache:
            dataset_dict = to_hf(selection, config, cache_dir=Path(cache))
            with _quiet():
                dataset_dict.save_to_disk(str(directory / config))
        written.append(directory / config)
    return written
