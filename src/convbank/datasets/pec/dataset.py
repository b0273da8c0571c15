"""PEC: persona-based empathetic conversations from Reddit (Zhong et al., EMNLP 2020): card,
files, reader (sharded for distributed builds), mapper (both ways), source writer and the
persona files as the side table ``pec_personas``."""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from convbank._atomic import open_regular
from convbank._lazy import lazy
from convbank.datasets import ConfigSpec, Dataset, Shard, SideTable, SourceFile, SourcePaths
from convbank.datasets.pec.present import PecPresentation
from convbank.datasets.pec.records import (
    ARCHIVE,
    DOMAINS,
    END_LINE,
    PERSONA_BATCH,
    SEPARATOR,
    Example,
    SpeakerPersona,
    Utterance,
    persona_schema,
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
from convbank.model import Conversation, Part, Participant, Turn
from convbank.model import schema as unified

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
else:
    pa = lazy("pyarrow")
    np = lazy("numpy")


__all__ = ["Pec"]

_CITATION = """@inproceedings{zhong2020towards,
  title = {Towards Persona-Based Empathetic Conversational Models},
  author = {Zhong, Peixiang and Zhang, Chen and Wang, Hao and Liu, Yong and Miao, Chunyan},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year = {2020},
  pages = {6556--6566}
}"""


class Pec(Dataset):
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
            size=252_434_681,  # with the sha256, from Hugging Face's dataset_infos.json
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
    presentation_class = PecPresentation

    def files_for(self, part: Part) -> list[SourceFile]:
        """The archive (all configs and splits live in it)."""
        self.parts(*part)  # checks both names
        return [self.file(ARCHIVE)]

    def read(self, paths: SourcePaths, part: Part) -> Iterator[Example]:
        """Stream the examples of ``hf_pec/{config}/{split}.txt``, personas joined."""
        return self.read_shard(paths, part, None)

    def split_bytes(self, paths: SourcePaths, part: Part) -> int:
        """The size of the split's text file."""
        path = _text_file(paths, part)
        return path.stat().st_size if path.is_file() else 0

    def shards(self, paths: SourcePaths, part: Part, count: int) -> list[Shard]:
        """Byte ranges of the split's text file, cut right after conversation ends."""
        return list(boundaries(_text_file(paths, part), count))

    def count_shard(self, paths: SourcePaths, part: Part, shard: Shard) -> int:
        """Conversations in a byte range: its closing lines, counted without parsing."""
        path = _text_file(paths, part)
        start, end = shard if shard is not None else (0, path.stat().st_size)
        with open_regular(path) as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return len(END_LINE.findall(data, start, end))

    def read_shard(self, paths: SourcePaths, part: Part, shard: Shard) -> Iterator[Example]:
        """The examples of one byte range of the split's text file (all of it for None)."""
        root = paths[ARCHIVE]
        data, persona_path = _text_file(paths, part), root / part.config / "persona.txt"
        for p in (data, persona_path):
            if not p.is_file():
                raise FormatError(
                    f"{root}: no {p.relative_to(root)}; expected the hf_pec layout "
                    "{happy,offmychest}/{train,valid,test,persona}.txt — re-fetch hf_pec.zip",
                    path=p,
                )
        personas = PersonaIndex.shared(persona_path)
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
                f"conversation closed by a line of 20 '*' — re-fetch hf_pec.zip",
                path=data,
            )

    def file_meta(self, paths: SourcePaths, part: Part) -> dict[str, Any]:
        """The text after the split file's last conversation, when there is any."""
        text = trailer(_text_file(paths, part))
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
                yield "pec_personas", pa.Table.from_pylist(rows, schema=persona_schema())
                rows, batches = [], batches + 1
        if rows or not batches:
            yield "pec_personas", pa.Table.from_pylist(rows, schema=persona_schema())

    def conversation_id(self, record: Example, part: Part, index: int) -> str:
        """``{domain}-{split}-{position:06d}``."""
        return f"{part.config}-{part.split}-{index:06d}"

    def to_conversation(self, record: Example, part: Part, index: int) -> Conversation:
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
        config = part.config
        return Conversation(
            dataset=self.name,
            config=config,
            split=part.split,
            conversation_id=self.conversation_id(record, part, index),
            source_index=index,
            participants=list(participants.values()),
            turns=[
                Turn(turn_index=i, participant_id=u.speaker, text=u.text) for i, u in enumerate(utterances)
            ],
            meta={"domain": config}
            if record.source is UNSET
            else {"domain": config, "source": record.source},
        )

    def map_batch(self, records: list[Example], part: Part, start: int) -> dict[str, pa.Table]:
        """The same tables as :meth:`to_conversation` would give, built column by column:
        no conversation objects, no per-row JSON encoding (the metadata takes few forms)."""
        return _columns(self, records, part.config, part.split, start)

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
        part: Part,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write ``hf_pec/{config}/{split}.txt`` as published, and a ``persona.txt`` of its
        speakers' personas (merged with one already there) that :meth:`write_side` replaces
        with the whole file when the bank holds ``pec_personas``."""
        folder = directory / "hf_pec" / part.config
        folder.mkdir(parents=True, exist_ok=True)
        data_path, persona_path = folder / f"{part.split}.txt", folder / "persona.txt"
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


def _text_file(paths: SourcePaths, part: Part) -> Path:
    """``hf_pec/{config}/{split}.txt`` in the extracted archive."""
    return paths[ARCHIVE] / part.config / f"{part.split}.txt"


_NO_META = "{}"
_MISSING = '{"persona_missing":true}'


def _columns(ds: Pec, records: list[Example], config: str, split: str, start: int) -> dict[str, pa.Table]:
    """:meth:`Pec.map_batch`: the unified and raw tables of a batch, from column lists by name
    (a column PEC does not fill, such as a turn's ``kind`` and ``meta``, is its field's default:
    see :meth:`convbank.model.schema.UnifiedSchema.table`)."""
    model = unified.SCHEMA
    conversations, participants, turns = _unified_columns(records, config, split, start)
    tables = {
        name: model.table(name, columns, len(columns["conversation_id"]))
        for name, columns in (
            ("conversations", conversations),
            ("participants", participants),
            ("turns", turns),
        )
    }
    tables["annotations"] = model.arrow()["annotations"].empty_table()
    tables["pec_raw"] = _raw_table(ds, records, tables["conversations"])
    return tables


def _unified_columns(
    records: list[Example], config: str, split: str, start: int
) -> tuple[dict[str, list[Any]], dict[str, list[Any]], dict[str, list[Any]]]:
    """The columns of the conversations, participants and turns of a batch, by name."""
    encode = msgspec.json.encode
    domain = encode({"domain": config}).decode()
    c: dict[str, list[Any]] = {"conversation_id": [], "num_turns": [], "meta": []}
    p: dict[str, list[Any]] = {
        "conversation_id": [],
        "participant_id": [],
        "role": [],
        "persona": [],
        "meta": [],
    }
    t: dict[str, list[Any]] = {"conversation_id": [], "turn_index": [], "participant_id": [], "text": []}
    c["source_index"] = list(range(start, start + len(records)))
    for position, record in enumerate(records):
        cid = f"{config}-{split}-{start + position:06d}"
        c["conversation_id"].append(cid)
        utterances = [*record.context, record.response]
        c["num_turns"].append(len(utterances))
        personas = {sp.speaker: sp.persona for sp in record.personas}
        seen: dict[str, int] = {}
        for k, u in enumerate(utterances):
            speaker = u.speaker
            if speaker not in seen:
                seen[speaker] = len(p["participant_id"])
                persona = personas.get(speaker)
                p["conversation_id"].append(cid)
                p["participant_id"].append(speaker)
                p["role"].append("speaker")
                p["persona"].append(persona if persona is not None else [])
                p["meta"].append(_NO_META if persona is not None else _MISSING)
            t["conversation_id"].append(cid)
            t["turn_index"].append(k)
            t["participant_id"].append(speaker)
            t["text"].append(u.text)
        p["role"][seen[record.response.speaker]] = "responder"
        c["meta"].append(
            domain if record.source is UNSET else encode({"domain": config, "source": record.source}).decode()
        )
    return c, p, t


def _raw_table(ds: Pec, records: list[Example], conversations: pa.Table) -> pa.Table:
    """The ``pec_raw`` rows of a batch, built in Arrow."""
    raw = ds.raw_schema
    utterance = raw.field("response").type
    context = [u for record in records for u in record.context]
    personas = [sp for record in records for sp in record.personas]
    context_offsets = np.cumsum([0, *(len(r.context) for r in records)], dtype=np.int32)
    persona_offsets = np.cumsum([0, *(len(r.personas) for r in records)], dtype=np.int32)
    return pa.Table.from_arrays(
        [
            conversations.column("conversation_id").combine_chunks(),
            conversations.column("source_index").combine_chunks(),
            pa.ListArray.from_arrays(
                pa.array(context_offsets, pa.int32()),
                pa.StructArray.from_arrays(
                    [
                        pa.array([u.speaker for u in context], pa.string()),
                        pa.array([u.text for u in context], pa.string()),
                    ],
                    fields=list(utterance),
                ),
                type=raw.field("context").type,
            ),
            pa.StructArray.from_arrays(
                [
                    pa.array([r.response.speaker for r in records], pa.string()),
                    pa.array([r.response.text for r in records], pa.string()),
                ],
                fields=list(utterance),
            ),
            pa.ListArray.from_arrays(
                pa.array(persona_offsets, pa.int32()),
                pa.StructArray.from_arrays(
                    [
                        pa.array([sp.speaker for sp in personas], pa.string()),
                        pa.array([sp.persona for sp in personas], pa.list_(pa.string())),
                    ],
                    fields=list(raw.field("personas").type.value_type),
                ),
                type=raw.field("personas").type,
            ),
            pa.array([None if r.source is UNSET else r.source for r in records], pa.string()),
        ],
        schema=raw,
    )
