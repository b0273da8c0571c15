"""PEC: persona-based empathetic conversations from Reddit (Zhong et al., EMNLP 2020)."""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
from msgspec import UNSET, Struct, UnsetType

from convbank.datasets._base import ConfigSpec, Dataset, Shard, SideTable, SourceFile, SourcePaths, Strict
from convbank.errors import FormatError
from convbank.model import Conversation, Participant, Turn

SEPARATOR = "---+---"
END = "*" * 20
_END_LINE = re.compile(rb"^[ \t]*\*{20}[ \t]*\r?$", re.MULTILINE)
DOMAINS = ("happy", "offmychest")
ARCHIVE = "hf_pec.zip"
PERSONA_BATCH = 20_000
"""Persona blocks per batch of the ``pec_personas`` table (memory stays flat)."""
PERSONA_SCHEMA = pa.schema(
    [
        pa.field("position", pa.int64(), nullable=False),
        pa.field("speaker", pa.string()),
        pa.field("persona", pa.list_(pa.string()), nullable=False),
        pa.field("source", pa.string()),
    ]
)


class Utterance(Struct, forbid_unknown_fields=True):
    """A line ``speaker ---+--- text``; continuation lines are joined to ``text`` with newlines."""

    speaker: str
    text: str


class SpeakerPersona(Struct, forbid_unknown_fields=True):
    """A speaker's persona sentences from ``persona.txt``."""

    speaker: str
    persona: list[str]


class Example(Strict):
    """One example: the context utterances, then the response; personas of every speaker
    of the example that ``persona.txt`` has, in order of first appearance.

    Speakers and texts are stripped and blank lines skipped, as the publisher's loader
    reads them; ``source`` keeps the example's lines exactly (blank lines before it, odd
    spacing around the separator, the closing line) when writing speakers and texts the
    publisher's way would not give them back."""

    context: list[Utterance]
    response: Utterance
    personas: list[SpeakerPersona]
    source: str | UnsetType = UNSET


_CITATION = """@inproceedings{zhong2020towards,
  title = {Towards Persona-Based Empathetic Conversational Models},
  author = {Zhong, Peixiang and Zhang, Chen and Wang, Hao and Liu, Yong and Miao, Chunyan},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year = {2020},
  pages = {6556--6566}
}"""


def _decode(raw: bytes, where: str, lineno: int, offset: int) -> str:
    """A line as text; invalid UTF-8 is a one-line error with its line and byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{where}: line {lineno}, byte {offset + exc.start}: invalid UTF-8 ({exc.reason}); "
            "expected UTF-8 text as published — re-fetch hf_pec.zip"
        ) from exc


class PersonaIndex:
    """Byte offsets of each speaker's persona in a ``persona.txt``; sentences are decoded on
    demand, so the file is never held in memory as Python strings."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("rb")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size else b""
        self._offsets: dict[str, tuple[int, int]] = {}
        data = self._map
        pos = 0
        lineno = 0
        speaker: str | None = None
        start = 0
        size = len(data)
        while pos < size:
            nl = data.find(b"\n", pos)
            end = size if nl < 0 else nl
            lineno += 1
            line = _decode(data[pos:end], str(path), lineno, pos).strip()
            nxt = end + 1
            if line == END:
                if speaker is None:
                    raise FormatError(f"{path}: line {lineno}: a '{END}' line with no speaker before it")
                self._offsets[speaker] = (start, pos)
                speaker = None
            elif line and speaker is None:
                speaker, start = line, nxt
            pos = nxt
        if speaker is not None:
            raise FormatError(
                f"{path}: ends inside the persona of {speaker!r}; expected a closing '{END}' "
                "line — the file may be truncated, re-fetch it"
            )

    def __contains__(self, speaker: str) -> bool:
        return speaker in self._offsets

    def __len__(self) -> int:
        return len(self._offsets)

    def speakers(self) -> list[str]:
        """The speakers with a persona, in file order."""
        return list(self._offsets)

    def get(self, speaker: str) -> list[str] | None:
        """The persona sentences of a speaker, or ``None`` if the file has none."""
        span = self._offsets.get(speaker)
        if span is None:
            return None
        text = self._map[span[0] : span[1]].decode("utf-8")
        return [s for s in (line.strip() for line in text.split("\n")) if s]

    def close(self) -> None:
        """Release the file."""
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._file.close()


def persona_blocks(path: Path) -> Iterator[tuple[str | None, list[str], str]]:
    """``(speaker, sentences, text)`` for each block of a ``persona.txt``, in file order:
    the speaker line, its sentences (stripped, blank lines skipped, as the publisher's loader
    reads them) and the block's exact text up to and including its closing line. Text after
    the last block (blank lines) comes last, with speaker ``None``."""
    speaker: str | None = None
    sentences: list[str] = []
    block: list[str] = []
    lineno = 0
    offset = 0
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = _decode(raw, str(path), lineno, offset)
            offset += len(raw)
            block.append(line)
            content = line.strip()
            if content == END:
                if speaker is None:
                    raise FormatError(f"{path}: line {lineno}: a '{END}' line with no speaker before it")
                yield speaker, sentences, "".join(block)
                speaker, sentences, block = None, [], []
            elif not content:
                continue
            elif speaker is None:
                speaker = content
            else:
                sentences.append(content)
    if speaker is not None:
        raise FormatError(
            f"{path}: ends inside the persona of {speaker!r} (line {lineno}); expected a closing "
            f"'{END}' line — the file may be truncated, re-fetch it"
        )
    if block:
        yield None, [], "".join(block)


def persona_block(speaker: str, sentences: Iterable[str]) -> str:
    """A persona block as the publisher writes it: speaker, one sentence a line, the end line."""
    return speaker + "\n" + "".join(s + "\n" for s in sentences) + END + "\n"


def conversation_block(utterances: Iterable[Utterance]) -> str:
    """A conversation as the publisher writes it: ``speaker ---+--- text`` a line (further
    lines of a text on lines of their own), then the end line."""
    out = []
    for u in utterances:
        first, _, rest = u.text.partition("\n")
        out.append(f"{u.speaker} {SEPARATOR} {first}\n")
        if rest:
            out.append(rest + "\n")
    out.append(END + "\n")
    return "".join(out)


def parse_lines(
    path: Path, start: int = 0, end: int | None = None
) -> Iterator[tuple[list[Utterance], str | None, int]]:
    """Yield the utterances of each conversation of a PEC text file, its exact text when it
    is not written the publisher's way (:func:`conversation_block`; blank lines before it
    included), else None, and its closing line number (counted from ``start``, a byte offset
    at a line start; ``end`` stops after the conversation that closes at or past that
    offset). Speakers and texts are stripped and blank lines skipped; a line without the
    separator continues the utterance before it."""
    utterances: list[Utterance] = []
    lines: list[str] = []
    block: list[str] = []
    usual = True  # every line so far is what conversation_block writes
    where = f"{path} (from byte {start})" if start else str(path)
    with path.open("rb") as f:
        f.seek(start)
        lineno = 0
        position = start
        for lineno, raw_bytes in enumerate(f, 1):
            if end is not None and position >= end and not utterances:
                return
            line = _decode(raw_bytes, where, lineno, position)
            position += len(raw_bytes)
            block.append(line)
            content = line.strip()
            usual = usual and line[:-1] == content and line[-1:] == "\n"
            if not content:
                usual = False
                continue
            if content == END:
                if lines:
                    utterances[-1].text = "\n".join(lines)
                if not utterances:
                    raise FormatError(f"{where}: line {lineno}: a conversation with no utterance")
                yield utterances, None if usual else "".join(block), lineno
                utterances, lines, block, usual = [], [], [], True
                continue
            speaker, sep, text = content.partition(SEPARATOR)
            if sep:
                if lines:
                    utterances[-1].text = "\n".join(lines)
                utterances.append(Utterance(speaker=speaker.strip(), text=""))
                lines = [text.strip()]
                usual = usual and speaker == utterances[-1].speaker + " " and text == " " + lines[0]
            elif utterances:
                lines.append(content)
            else:
                raise FormatError(
                    f"{where}: line {lineno}: expected 'speaker {SEPARATOR} utterance', got "
                    f"{content[:60]!r} with no utterance before it to continue"
                )
    if utterances:
        raise FormatError(
            f"{where}: ends inside a conversation (line {lineno}); expected a closing '{END}' "
            "line — the file may be truncated, re-fetch it"
        )


def trailer(path: Path) -> str:
    """The text after the last closing line of a PEC text file (normally none)."""
    size = path.stat().st_size
    if not size:
        return ""
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        last = None
        for m in _END_LINE.finditer(data, max(0, size - (1 << 20))):
            last = m
        if last is None:
            for m in _END_LINE.finditer(data):
                last = m
        if last is None:
            return data[:].decode("utf-8", "replace")
        after = last.end() + 1 if last.end() < size else size
        return data[after:].decode("utf-8", "replace")


def boundaries(path: Path, count: int) -> list[tuple[int, int]]:
    """Split a PEC text file into at most ``count`` byte ranges that each start right after a
    conversation's closing line (or at 0) and together cover the file."""
    size = path.stat().st_size
    cuts = [0]
    with path.open("rb") as f:
        for k in range(1, count):
            target = max(size * k // count, cuts[-1])
            f.seek(target)
            if target:
                f.readline()  # to the next line start
            while line := f.readline():
                if line.strip() == END.encode():
                    break
            at = f.tell()
            if cuts[-1] < at < size:
                cuts.append(at)
    cuts.append(size)
    return list(pairwise(cuts))


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
            return len(_END_LINE.findall(data, start, end))

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
