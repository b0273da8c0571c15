"""PEC: persona-based empathetic conversations from Reddit (Zhong et al., EMNLP 2020): card,
files, reader (sharded for distributed builds), mapper (both ways), source writer and the
persona files as the side table ``pec_personas``."""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from msgspec import UNSET

from convbank.datasets import ConfigSpec, Dataset, Shard, SideTable, SourceFile, SourcePaths
from convbank.datasets.pec.present import PecPresentation
from convbank.datasets.pec.records import (
    ARCHIVE,
    DOMAINS,
    END_LINE,
    PERSONA_BATCH,
    PERSONA_SCHEMA,
    SEPARATOR,
    Example,
    SpeakerPersona,
    Utterance,
)
from convbank.datasets.pec.text import (
    PersonaIndex,
    boundaries,
    conversation_block,
    parse_lines,
    persona_block,
    persona_blocks,
    trailer,
)
from convbank.errors import FormatError
from convbank.model import Conversation, Participant, Turn

__all__ = ["Pec"]

_CITATION = """@inproceedings{zhong2020towards,
  title = {Towards Persona-Based Empathetic Conversational Models},
  author = {Zhong, Peixiang and Zhang, Chen and Wang, Hao and Liu, Yong and Miao, Chunyan},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year = {2020},
  pages = {6556--6566}
}"""


class Pec(PecPresentation, Dataset):
    """PEC: about 355,000 Reddit conversations with empathetic responses and speaker personas."""

    name = "pec"
    title = "PEC: Persona-Based Empathetic Conversations"
    description = (
        "Reddit threads from r/happy and r/offmychest: each example is a context of "
        "utterances and an empathetic response, with persona sentences of the speakers "
        "(every speaker, not only the responder)."
    )
    license = "GPL-3.0"
    citation = _CITATION
    homepage = "https://github.com/zhongpeixiang/PEC"
    version = "1.0.0"
    files = (
        SourceFile(
            name=ARCHIVE,
            url="https://dl.dropboxusercontent.com/s/u04fzuhsnxd0uvw/hf_pec.zip",
            sha256="5daa1e0a1569a8927f045191ed1939fe25769860fd7d78dc414bf5583dab0bf1",
            extract_to="hf_pec",
        ),
    )
    configs = (
        ConfigSpec(
            name="happy",
            description="r/happy.",
            splits={"train": 157195, "valid": 19829, "test": 22730},
        ),
        ConfigSpec(
            name="offmychest",
            description="r/offmychest.",
            splits={"train": 123968, "valid": 16004, "test": 15324},
        ),
        ConfigSpec(
            name="all",
            description="Both domains (read from happy and offmychest; not stored twice).",
            splits={"train": 281163, "valid": 35833, "test": 38054},
            union_of=DOMAINS,
        ),
    )
    raw_type = Example
    side_tables = ("pec_personas",)

    def files_for(self, config: str, split: str) -> list[SourceFile]:
        """The archive (all configs and splits live in it)."""
        self.parts(config, split)  # checks both names
        return [self.file(ARCHIVE)]

    def read(self, paths: SourcePaths, config: str, split: str) -> Iterator[Example]:
        """Stream the examples of ``hf_pec/{config}/{split}.txt``, personas joined."""
        return self.read_shard(paths, config, split, None)

    def shards(self, paths: SourcePaths, config: str, split: str, count: int) -> list[Shard]:
        """Byte ranges of the split's text file, cut right after conversation ends."""
        return list(boundaries(paths[ARCHIVE] / config / f"{split}.txt", count))

    def count_shard(self, paths: SourcePaths, config: str, split: str, shard: Shard) -> int:
        """Conversations in a byte range: its closing lines, counted without parsing."""
        path = paths[ARCHIVE] / config / f"{split}.txt"
        start, end = shard if shard is not None else (0, path.stat().st_size)
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return len(END_LINE.findall(data, start, end))

    def read_shard(self, paths: SourcePaths, config: str, split: str, shard: Shard) -> Iterator[Example]:
        """The examples of one byte range of the split's text file (all of it for None)."""
        root = paths[ARCHIVE]
        data, persona_path = root / config / f"{split}.txt", root / config / "persona.txt"
        for p in (data, persona_path):
            if not p.is_file():
                raise FormatError(
                    f"{root}: no {p.relative_to(root)}; expected the hf_pec layout "
                    "{happy,offmychest}/{train,valid,test,persona}.txt — re-fetch hf_pec.zip"
                )
        personas = PersonaIndex(persona_path)
        try:
            start, end = shard if shard is not None else (0, None)
            count = 0
            for utterances, text, _ in parse_lines(data, start, end):
                found: list[SpeakerPersona] = []
                seen: set[str] = set()
                for u in utterances:
                    if u.speaker in seen:
                        continue
                    seen.add(u.speaker)
                    persona = personas.get(u.speaker)
                    if persona is not None:
                        found.append(SpeakerPersona(speaker=u.speaker, persona=persona))
                count += 1
                yield Example(
                    context=utterances[:-1],
                    response=utterances[-1],
                    personas=found,
                    source=UNSET if text is None else text,
                )
            if not count and start == 0:
                raise FormatError(
                    f"{data}: no conversation; expected lines 'speaker {SEPARATOR} utterance' each "
                    f"conversation closed by a line of 20 '*' — re-fetch hf_pec.zip"
                )
        finally:
            personas.close()

    def file_meta(self, paths: SourcePaths, config: str, split: str) -> dict[str, Any]:
        """The text after the split file's last conversation, when there is any."""
        text = trailer(paths[ARCHIVE] / config / f"{split}.txt")
        return {"_trailer": text} if text else {}

    def extra_tables(self, paths: SourcePaths, config: str) -> Iterator[tuple[str, pa.Table]]:
        """The config's ``persona.txt`` whole, as table ``pec_personas``: one row per block
        in file order (``position``, ``speaker``, ``persona``) with the block's exact text in
        ``source`` when it is not written the publisher's way (null otherwise)."""
        path = paths[ARCHIVE] / config / "persona.txt"
        rows: list[dict[str, Any]] = []
        batches = 0
        for position, (speaker, sentences, text) in enumerate(persona_blocks(path)):
            canonical = speaker is not None and text == persona_block(speaker, sentences)
            rows.append(
                {
                    "position": position,
                    "speaker": speaker,
                    "persona": sentences,
                    "source": None if canonical else text,
                }
            )
            if len(rows) == PERSONA_BATCH:
                yield "pec_personas", pa.Table.from_pylist(rows, schema=PERSONA_SCHEMA)
                rows, batches = [], batches + 1
        if rows or not batches:
            yield "pec_personas", pa.Table.from_pylist(rows, schema=PERSONA_SCHEMA)

    def conversation_id(self, record: Example, config: str, split: str, index: int) -> str:
        """``{domain}-{split}-{position:06d}``."""
        return f"{config}-{split}-{index:06d}"

    def to_conversation(self, record: Example, config: str, split: str, index: int) -> Conversation:
        """Context turns, then the response; every speaker a participant with a persona; the
        example's exact text in meta ``source`` when it is not written the usual way."""
        personas = {p.speaker: p.persona for p in record.personas}
        utterances = [*record.context, record.response]
        participants: dict[str, Participant] = {}
        for u in utterances:
            if u.speaker not in participants:
                persona = personas.get(u.speaker)
                participants[u.speaker] = Participant(
                    participant_id=u.speaker,
                    role="speaker",
                    persona=persona or [],
                    meta={} if persona is not None else {"persona_missing": True},
                )
        participants[record.response.speaker].role = "responder"
        return Conversation(
            dataset=self.name,
            config=config,
            split=split,
            conversation_id=self.conversation_id(record, config, split, index),
            source_index=index,
            participants=list(participants.values()),
            turns=[
                Turn(turn_index=i, participant_id=u.speaker, text=u.text) for i, u in enumerate(utterances)
            ],
            meta={"domain": config}
            if record.source is UNSET
            else {"domain": config, "source": record.source},
        )

    def from_conversation(self, conversation: Conversation) -> Example:
        """Rebuild the example: the last turn is the response."""
        utterances = [Utterance(speaker=t.participant_id, text=t.text) for t in conversation.turns]
        return Example(
            context=utterances[:-1],
            response=utterances[-1],
            personas=[
                SpeakerPersona(speaker=p.participant_id, persona=list(p.persona))
                for p in conversation.participants
                if not p.meta.get("persona_missing")
            ],
            source=conversation.meta.get("source", UNSET),
        )

    def write_source(
        self,
        records: Iterable[Example],
        config: str,
        split: str,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write ``hf_pec/{config}/{split}.txt`` as published, and a ``persona.txt`` of its
        speakers' personas (merged with one already there) that :meth:`write_side` replaces
        with the whole file when the bank holds ``pec_personas``."""
        folder = directory / "hf_pec" / config
        folder.mkdir(parents=True, exist_ok=True)
        data_path, persona_path = folder / f"{split}.txt", folder / "persona.txt"
        personas: dict[str, list[str]] = {}
        if persona_path.exists():
            index = PersonaIndex(persona_path)
            try:
                personas = {s: index.get(s) or [] for s in index.speakers()}
            finally:
                index.close()
        with data_path.open("w", encoding="utf-8", newline="") as out:
            for rec in records:
                if rec.source is UNSET:
                    out.write(conversation_block([*rec.context, rec.response]))
                else:
                    out.write(rec.source)
                for p in rec.personas:
                    personas.setdefault(p.speaker, p.persona)
            out.write(file_meta.get("_trailer", ""))
        with persona_path.open("w", encoding="utf-8", newline="") as out:
            out.writelines(persona_block(speaker, sentences) for speaker, sentences in personas.items())
        return [data_path, persona_path]

    def write_side(self, side: SideTable, config: str, directory: Path) -> list[Path]:
        """``hf_pec/{config}/persona.txt`` rebuilt whole from ``pec_personas``."""
        table = side("pec_personas")
        if table is None:
            return []
        path = directory / "hf_pec" / config / "persona.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = table.sort_by("position").select(["speaker", "persona", "source"]).to_pylist()
        with path.open("w", encoding="utf-8", newline="") as out:
            for row in rows:
                out.write(
                    row["source"]
                    if row["source"] is not None
                    else persona_block(row["speaker"], row["persona"])
                )
        return [path]
