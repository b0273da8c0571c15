"""PEC: persona-based empathetic conversations from Reddit (Zhong et al., EMNLP 2020)."""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterable, Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from msgspec import Struct

from convbank.datasets._base import ConfigSpec, Dataset, Shard, SourceFile, SourcePaths
from convbank.errors import FormatError
from convbank.model import Conversation, Participant, Turn

SEPARATOR = "---+---"
END = "*" * 20
_END_LINE = re.compile(rb"^[ \t]*\*{20}[ \t]*\r?$", re.MULTILINE)
DOMAINS = ("happy", "offmychest")
ARCHIVE = "hf_pec.zip"


class Utterance(Struct, forbid_unknown_fields=True):
    """A line ``speaker ---+--- text``; continuation lines are joined to ``text`` with newlines."""

    speaker: str
    text: str


class SpeakerPersona(Struct, forbid_unknown_fields=True):
    """A speaker's persona sentences from ``persona.txt``."""

    speaker: str
    persona: list[str]


class Example(Struct, forbid_unknown_fields=True):
    """One example: the context utterances, then the response; personas of every speaker
    of the example that ``persona.txt`` has, in order of first appearance."""

    context: list[Utterance]
    response: Utterance
    personas: list[SpeakerPersona]


_CITATION = """@inproceedings{zhong2020towards,
  title = {Towards Persona-Based Empathetic Conversational Models},
  author = {Zhong, Peixiang and Zhang, Chen and Wang, Hao and Liu, Yong and Miao, Chunyan},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year = {2020},
  pages = {6556--6566}
}"""


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
            line = data[pos:end].decode("utf-8").strip()
            lineno += 1
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


def parse_lines(path: Path, start: int = 0, end: int | None = None) -> Iterator[tuple[list[Utterance], int]]:
    """Yield the utterances of each conversation of a PEC text file with its closing line
    number (counted from ``start``, a byte offset at a line start; ``end`` stops after the
    conversation that closes at or past that offset)."""
    utterances: list[Utterance] = []
    lines: list[str] = []
    where = f"{path} (from byte {start})" if start else str(path)
    with path.open("rb") as f:
        f.seek(start)
        lineno = 0
        position = start
        for lineno, raw_bytes in enumerate(f, 1):
            if end is not None and position >= end and not utterances:
                return
            position += len(raw_bytes)
            line = raw_bytes.decode("utf-8").strip()
            if not line:
                continue
            if line == END:
                if lines:
                    utterances[-1].text = "\n".join(lines)
                if not utterances:
                    raise FormatError(f"{where}: line {lineno}: a conversation with no utterance")
                yield utterances, lineno
                utterances, lines = [], []
                continue
            speaker, sep, text = line.partition(SEPARATOR)
            if sep:
                if lines:
                    utterances[-1].text = "\n".join(lines)
                utterances.append(Utterance(speaker=speaker.strip(), text=""))
                lines = [text.strip()]
            elif utterances:
                lines.append(line)
            else:
                raise FormatError(
                    f"{where}: line {lineno}: expected 'speaker {SEPARATOR} utterance', got "
                    f"{line[:60]!r} with no utterance before it to continue"
                )
    if utterances:
        raise FormatError(
            f"{where}: ends inside a conversation (line {lineno}); expected a closing '{END}' "
            "line — the file may be truncated, re-fetch it"
        )


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

    def files_for(self, config: str, split: str) -> list[SourceFile]:
        """The archive (all configs and splits live in it)."""
        self.splits(config, split)
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
            for utterances, _ in parse_lines(data, start, end):
                found: list[SpeakerPersona] = []
                seen: set[str] = set()
                for u in utterances:
                    if u.speaker in seen:
                        continue
                    seen.add(u.speaker)
                    persona = personas.get(u.speaker)
                    if persona is not None:
                        found.append(SpeakerPersona(speaker=u.speaker, persona=persona))
                yield Example(context=utterances[:-1], response=utterances[-1], personas=found)
        finally:
            personas.close()

    def conversation_id(self, record: Example, config: str, split: str, index: int) -> str:
        """``{domain}-{split}-{position:06d}``."""
        return f"{config}-{split}-{index:06d}"

    def to_conversation(self, record: Example, config: str, split: str, index: int) -> Conversation:
        """Context turns, then the response; every speaker a participant with a persona."""
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
            meta={"domain": config},
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
        )

    def write_source(
        self,
        records: Iterable[Example],
        config: str,
        split: str,
        file_meta: Mapping[str, Any],
        directory: Path,
    ) -> list[Path]:
        """Write ``hf_pec/{config}/{split}.txt`` and the personas of its speakers to
        ``hf_pec/{config}/persona.txt`` (merged with one already there)."""
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
        with data_path.open("w", encoding="utf-8") as out:
            for rec in records:
                for u in [*rec.context, rec.response]:
                    first, *rest = u.text.split("\n")
                    out.write(f"{u.speaker} {SEPARATOR} {first}\n")
                    out.writelines(f"{line}\n" for line in rest)
                out.write(END + "\n")
                for p in rec.personas:
                    personas.setdefault(p.speaker, p.persona)
        with persona_path.open("w", encoding="utf-8") as out:
            for speaker, sentences in personas.items():
                out.write(speaker + "\n")
                out.writelines(s + "\n" for s in sentences)
                out.write(END + "\n")
        return [data_path, persona_path]
