"""``convokit``: a ConvoKit corpus folder (``utterances.jsonl``, ``speakers.json``,
``conversations.json``, ``corpus.json``, ``index.json``) that ``convokit.Corpus(filename=...)``
loads, written directly so exporting needs no ConvoKit (and no PyTorch).

- Speakers: a participant of one conversation, id ``{conversation_id}/{participant_id}``
  (CaSiNo's ``mturk_agent_1`` is a different person in every dialogue), unless the dataset
  says its participant ids name the same person everywhere
  (:attr:`~convbank.datasets.Presentation.global_speakers`: PEC's Reddit authors keep their
  names). Speaker meta: role, persona, the participant's meta and, for conversation-scoped
  ids, ``participant_id``.
- Utterances: id ``{conversation_id}/{turn_index}``, each replying to the turn before;
  ``timestamp`` the turn's position in its conversation (none of the datasets times its
  messages, and ConvoKit orders utterances by timestamp); meta ``turn_index``, ``kind``, the
  turn's meta and its ``annotations``.
- Conversations: meta ``dataset``, ``config``, ``split``, ``source_index`` and the
  conversation's meta. Corpus meta: the dataset's card.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from convbank.export._core import Selection
from convbank.export._format import Format

__all__ = ["FORMAT", "write_convokit"]

_encode = msgspec.json.Encoder().encode


def _type_name(value: Any) -> str:
    return f"<class '{type(value).__name__}'>"


def _index(index: dict[str, set[str]], meta: dict[str, Any]) -> None:
    for key, value in meta.items():
        index.setdefault(key, set()).add(_type_name(value))


def _annotation(a: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"layer": a.layer, "label": a.label}
    if a.start_char is not None or a.end_char is not None:
        out.update(start_char=a.start_char, end_char=a.end_char)
    if a.meta:
        out["meta"] = a.meta
    return out


def _folder(selection: Selection) -> list[str]:
    return [f"{selection.dataset}_convokit"]


def write_convokit(selection: Selection, directory: Path) -> list[Path]:
    """Write the corpus folder ``{dataset}_convokit/`` and return it."""
    folder = directory / _folder(selection)[0]
    folder.mkdir()
    indexes: dict[str, dict[str, set[str]]] = {"utterances": {}, "speakers": {}, "conversations": {}}
    speakers: dict[str, dict[str, Any]] = {}
    conversations: dict[str, dict[str, Any]] = {}
    scoped = not selection.corpus.dataset.presentation.global_speakers
    with (folder / "utterances.jsonl").open("wb") as f:
        for conv in selection:
            cid = conv.conversation_id

            def speaker_id(pid: str, cid: str = cid) -> str:
                return f"{cid}/{pid}" if scoped else pid

            for p in conv.participants:
                meta = {"role": p.role, "persona": p.persona, **p.meta}
                if scoped:
                    meta = {"participant_id": p.participant_id, **meta}
                speakers[speaker_id(p.participant_id)] = {"meta": meta, "vectors": []}
                _index(indexes["speakers"], meta)
            cmeta = {
                "dataset": conv.dataset,
                "config": conv.config,
                "split": conv.split,
                "source_index": conv.source_index,
                **conv.meta,
            }
            conversations[cid] = {"meta": cmeta, "vectors": []}
            _index(indexes["conversations"], cmeta)
            for t in conv.turns:
                umeta = {
                    "turn_index": t.turn_index,
                    "kind": t.kind,
                    **t.meta,
                    "annotations": [_annotation(a) for a in conv.annotations_of(t.turn_index)],
                }
                _index(indexes["utterances"], umeta)
                f.write(
                    _encode(
                        {
                            "id": f"{cid}/{t.turn_index}",
                            "conversation_id": cid,
                            "text": t.text,
                            "speaker": speaker_id(t.participant_id),
                            "meta": umeta,
                            "reply_to": f"{cid}/{t.turn_index - 1}" if t.turn_index else None,
                            "timestamp": t.turn_index,
                            "vectors": [],
                        }
                    )
                    + b"\n"
                )
    ds = selection.corpus.dataset
    corpus_meta = {
        "name": ds.name,
        "title": ds.title,
        "description": ds.description,
        "license": ds.license,
        "citation": ds.citation,
        "homepage": ds.homepage,
        "version": ds.version,
        "exported_by": "convbank",
    }
    files: Iterable[tuple[str, Any]] = (
        ("speakers.json", speakers),
        ("conversations.json", conversations),
        ("corpus.json", corpus_meta),
        (
            "index.json",
            {
                "utterances-index": {k: sorted(v) for k, v in indexes["utterances"].items()},
                "speakers-index": {k: sorted(v) for k, v in indexes["speakers"].items()},
                "conversations-index": {k: sorted(v) for k, v in indexes["conversations"].items()},
                "overall-index": {k: [_type_name(v)] for k, v in corpus_meta.items()},
                "version": 1,
                "vectors": [],
            },
        ),
    )
    for name, data in files:
        (folder / name).write_bytes(_encode(data))
    return [folder]


FORMAT = Format(
    name="convokit",
    summary="a ConvoKit corpus folder (DIR/<dataset>_convokit)",
    writes="`DIR/<dataset>_convokit/`: utterances with `reply_to` chains and all turn meta and "
    "annotations, speakers, conversations, corpus meta",
    read_with="`convokit.Corpus(filename=...)`",
    writer=write_convokit,
    plan=_folder,
)
"""The ``convokit`` format: written without ConvoKit, so it needs no extra."""
